"""The front ends: the command line, the flake8 plugin, the language server, output formats, the
result cache and file discovery."""
