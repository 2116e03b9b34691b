import sys

from enzh.cli.main import main

sys.exit(main())
