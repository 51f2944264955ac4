from flake8_forksafe.cli import main

raise SystemExit(main())
