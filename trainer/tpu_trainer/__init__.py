"""TPU Workbench trainer: a small torch_xla / PyTorch Llama trainer configured with hydra."""

__version__ = "0.1.0"
