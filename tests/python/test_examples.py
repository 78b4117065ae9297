"""The Python example (skeleton/python/examples/mandelbrot.py) gives the image a serial loop gives."""

import importlib.util
import os

import numpy as np

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "skeleton", "python", "examples", "mandelbrot.py")


def load():
    spec = importlib.util.spec_from_file_location("mandelbrot_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mandelbrot_matches_serial(rank):
    m = load()
    pixels, report = m.image(64, 48, 60, technique="af")
    if rank == 0:
        serial = np.stack([m.row(y, 64, 48, 60) for y in range(48)])
        assert pixels.dtype == np.uint16 and pixels.shape == (48, 64)
        np.testing.assert_array_equal(pixels, serial)
        assert report.tasks == 48 and (pixels == 60).any() and (pixels < 5).any()
    else:
        assert pixels is None
