"""Numpy kernels shared by several reference operators (convolution, pooling windows)."""
