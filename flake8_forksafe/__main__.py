from flake8_forksafe.frontends.cli import main

raise SystemExit(main())
