from rdmalab.cli import main

raise SystemExit(main())
