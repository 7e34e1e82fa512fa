import json
import sys

import numpy as np

data = np.ones(4)
json.dump({"sum": float(data.sum())}, sys.stdout)
