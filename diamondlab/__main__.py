import sys

from diamondlab._entry import main

sys.exit(main())
