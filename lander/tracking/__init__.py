"""Where metrics go besides the CSV files: Weights & Biases and TensorBoard, each a tracker with a ``log(metrics,
step)`` and an SB3 ``KVWriter`` forwarding SB3's own records."""
