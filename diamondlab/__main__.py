import sys

from diamondlab.cli import main

sys.exit(main())
