"""Mandelbrot image from Python with pfarm: a task per row, rows near the set cost far more than the others, the
results (one row of iteration counts each) land in one NumPy array on rank 0, unpickled (out_dtype/out_shape).

    mpiexec -n 4 /usr/bin/python3 skeleton/python/examples/mandelbrot.py [width height max_iter] [out.npy]
"""

import sys

import numpy as np

import pfarm

X0, X1, Y0, Y1 = -2.0, 1.0, -1.5, 1.5


def row(y, width, height, max_iter):
    """Escape-time counts of image row y (vectorised over the row)."""
    c = np.linspace(X0, X1, width) + 1j * (Y0 + (Y1 - Y0) * y / max(height - 1, 1))
    z = np.zeros_like(c)
    counts = np.full(width, max_iter, dtype=np.uint16)
    alive = np.ones(width, dtype=bool)
    for i in range(max_iter):
        z[alive] = z[alive] * z[alive] + c[alive]
        escaped = alive & (np.abs(z) > 2.0)
        counts[escaped] = i
        alive &= ~escaped
        if not alive.any():
            break
    return counts


def image(width, height, max_iter, **options):
    """The image on rank 0 (None elsewhere) and the farm's report."""
    return pfarm.map(lambda y: row(y, width, height, max_iter), range(height), out_dtype=np.uint16,
                     out_shape=(width,), report=True, **options)


if __name__ == "__main__":
    width, height, max_iter = (int(a) for a in sys.argv[1:4]) if len(sys.argv) >= 4 else (800, 600, 256)
    pixels, report = image(width, height, max_iter)
    if pixels is not None:
        print(f"{width}x{height}, {max_iter} iterations: {report.makespan:.3f} s on {report.ranks} ranks, "
              f"chunks per rank {[len(c) for c in report.chunks_per_rank]}, imbalance {report.percent_imbalance:.1f} %")
        if len(sys.argv) >= 5:
            np.save(sys.argv[4], pixels)
