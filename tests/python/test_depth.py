"""The Python module at high bit depth (SPEC 7) on the CPU: uint16 frames are processed at their
own depth (HE equal to a numpy oracle of the SPEC 7 rule at 10, 12 and 16 bits; DCP of a 16-bit
photo within a code of the 8-bit result), frames() hands out uint16 RGB of deep inputs, and bad
depths, values and dtypes raise errors naming the argument."""
import itertools

import numpy as np
import pytest

import hazefree

cv2 = pytest.importorskip("cv2", reason="python3-opencv (test dependency) is not installed")


def he_oracle(channel, depth):
    """SPEC 7's global HE of one channel of codes at `depth`: 2^depth bins, the first non-empty
    bin i0 maps to 0, bin v > i0 to float32(sum of hist over (i0, v]) * float32(M / (N - hist[i0]))
    rounded half to even, at most M; an image of one code is unchanged."""
    m = (1 << depth) - 1
    hist = np.bincount(channel.ravel(), minlength=1 << depth).astype(np.int64)
    i0 = int(np.flatnonzero(hist)[0])
    if hist[i0] == channel.size:
        return channel.copy()
    scale = np.float32(m) / np.float32(channel.size - hist[i0])
    above_first = np.cumsum(hist) - np.cumsum(hist)[i0]
    lut = np.minimum(np.rint(above_first.astype(np.float32) * scale), m).astype(np.int64)
    lut[i0] = 0
    return lut[channel].astype(np.uint16)


def uneven_codes(shape, depth, seed):
    """Codes of `depth` bits crowded into part of the range, with noise: HE moves nearly all."""
    rng = np.random.default_rng(seed)
    m = (1 << depth) - 1
    ramp = np.linspace(0.25, 0.6, shape[1])[None, :] * np.ones(shape[:2])
    if len(shape) == 3:
        ramp = ramp[:, :, None] * np.array([1.0, 0.9, 1.1])
    noise = rng.integers(0, max(2, m // 50), shape)
    return np.minimum(ramp * m + noise, m).astype(np.uint16)


def raises(kind, fragment, call):
    with pytest.raises(kind) as error:
        call()
    assert fragment in str(error.value), f"message {str(error.value)!r} lacks {fragment!r}"


@pytest.mark.parametrize("depth", [10, 12, 16])
def test_he_grey_uint16_equals_the_spec7_rule(depth):
    frame = uneven_codes((45, 67), depth, depth)
    p = hazefree.Processor(mode="he", backend="cpu")
    result = p.process(frame, depth=depth)
    assert result.dtype == np.uint16 and result.shape == frame.shape
    np.testing.assert_array_equal(result, he_oracle(frame, depth))
    assert np.count_nonzero(result != frame) > frame.size // 2
    if depth == 16:  # the default depth of uint16 frames
        np.testing.assert_array_equal(hazefree.Processor(mode="he", backend="cpu").process(frame), result)


def test_he_rgb_uint16_equalizes_each_channel_at_its_depth():
    frame = uneven_codes((33, 40, 3), 10, 3)
    out = np.full((33, 40, 3), 7, np.uint16)
    result = hazefree.Processor(mode="he", color="rgb", backend="cpu").process(frame, out=out, depth=10)
    assert result is out
    for c in range(3):
        np.testing.assert_array_equal(out[:, :, c], he_oracle(np.ascontiguousarray(frame[:, :, c]), 10))
    assert out.max() == 1023


def test_dcp_on_a_16_bit_photo_is_within_a_code_of_the_8_bit_result(samples):
    bgr = cv2.imread(str(samples / "images" / "coffee-hazy.png"), cv2.IMREAD_COLOR)
    rgb8 = np.ascontiguousarray(bgr[:, :, ::-1])
    rgb16 = rgb8.astype(np.uint16) * 257  # the same picture at 16 bits (255 -> 65535)
    result16 = hazefree.Processor(mode="dcp", backend="cpu").process(rgb16)
    result8 = hazefree.Processor(mode="dcp", backend="cpu").process(rgb8)
    assert result16.dtype == np.uint16 and result16.shape == rgb16.shape
    assert np.count_nonzero(result16 != rgb16) > rgb16.size // 2
    # Same float chain, rounded to 16 instead of 8 bits: within one 8-bit code, and finer.
    difference = np.abs(result16 / 257.0 - result8)
    assert difference.max() <= 1.0 and difference.mean() < 0.3
    assert len(np.unique(result16)) > 4 * len(np.unique(result8))


def test_depth_errors_name_the_argument():
    p = hazefree.Processor(mode="he", backend="cpu")
    grey16 = np.zeros((8, 8), np.uint16)
    grey8 = np.zeros((8, 8), np.uint8)
    raises(ValueError, "depth: 8 for a uint16 frame; expected 9 to 16", lambda: p.process(grey16, depth=8))
    raises(ValueError, "depth: 17 for a uint16 frame", lambda: p.process(grey16, depth=17))
    raises(ValueError, "depth: 10 for a uint8 frame", lambda: p.process(grey8, depth=10))
    raises(TypeError, "depth: str", lambda: p.process(grey16, depth="10"))
    too_big = grey16.copy()
    too_big[3, 4] = 1024
    raises(ValueError, "frame: a sample of 1024 is above 1023, the largest code at depth=10",
           lambda: p.process(too_big, depth=10))
    assert p.process(too_big, depth=11).dtype == np.uint16
    raises(TypeError, "out: dtype uint8, expected frame's uint16", lambda: p.process(grey16, out=grey8))
    raises(TypeError, "frame: dtype >u2, expected uint8 or uint16", lambda: p.process(grey16.astype(">u2")))
    raises(TypeError, "frame: dtype int32, expected uint8 or uint16", lambda: p.process(grey16.astype(np.int32)))
    raises(ValueError, "frame: rows must be contiguous (pixel stride 2 bytes",
           lambda: p.process(np.zeros((8, 16), np.uint16)[:, ::2]))
    raises(ValueError, "out: overlaps the input frame", lambda: p.process(grey16, out=grey16))
    bits = hazefree.Processor(mode="he", color="rgb-bits", backend="cpu")
    raises(ValueError, "rgb-bits", lambda: bits.process(np.zeros((4, 4, 3), np.uint16), depth=10))


def test_frames_of_a_deep_input_are_uint16_rgb(samples, tmp_path):
    clip = samples / "hazy-street.mp4"
    deep = list(itertools.islice(hazefree.frames(clip, mode="he", backend="cpu", output_depth=10), 2))
    assert len(deep) == 2
    for frame in deep:
        assert frame.dtype == np.uint16 and frame.shape == (576, 768, 3)
        assert frame.max() <= 1023 and len(np.unique(frame)) > 256
    eight = next(hazefree.frames(clip, mode="he", backend="cpu", output_depth=8))
    assert eight.dtype == np.uint8

    # A 16-bit PNG still: frames() gives what Processor gives on the same 16-bit pixels.
    bgr = cv2.imread(str(samples / "images" / "coffee-hazy.png"), cv2.IMREAD_COLOR)
    rgb16 = np.ascontiguousarray(bgr[:, :, ::-1]).astype(np.uint16) * 256 + 100  # not a multiple of 257
    still = tmp_path / "coffee-hazy-16.png"
    assert cv2.imwrite(str(still), np.ascontiguousarray(rgb16[:, :, ::-1]))
    got = list(hazefree.frames(still, mode="dcp", backend="cpu"))
    assert len(got) == 1 and got[0].dtype == np.uint16
    np.testing.assert_array_equal(got[0], hazefree.Processor(mode="dcp", backend="cpu").process(rgb16))
