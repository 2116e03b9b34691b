import sys

from enzh.cli import main

sys.exit(main())
