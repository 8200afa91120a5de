# Type stub of the hazefree package (see the docstrings in __init__.py).
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union
import os

import numpy as np
import numpy.typing as npt

__version__: str
version_info: Tuple[int, int, int]

class ConfigKey(NamedTuple):
    name: str
    help: str
    range: str
    default: str
    kind: str  # "integer", "number", "boolean", "choice", "text"
    minimum: float
    maximum: float
    minimum_excluded: bool
    maximum_excluded: bool
    choices: Tuple[str, ...]
    modes: Tuple[str, ...]

OptionValue = Union[int, float, bool, str, Tuple[int, ...], None]
# A CUDA stream: an int cudaStream_t, torch.cuda.Stream, cupy.cuda.Stream, or __cuda_stream__.
Stream = Any

def config_keys() -> List[ConfigKey]: ...
def gpu_available() -> bool: ...

class Processor:
    def __init__(self, mode: str = "dcp", backend: str = "auto", **keys: OptionValue) -> None: ...
    # numpy in -> numpy out; a PyTorch/CuPy CUDA array in -> the same kind on the same device.
    # uint8 frames are 8-bit; uint16 frames hold `depth` bits (9..16, 16 when None), the result
    # uint16 of the same depth.
    def process(self, frame: Any, out: Optional[Any] = None, stream: Optional[Stream] = None,
                depth: Optional[int] = None) -> Any: ...
    def reset(self) -> None: ...
    @property
    def atmospheric_light(self) -> Tuple[float, float, float]: ...
    def haze_index(self) -> float: ...
    @property
    def backend(self) -> str: ...
    @property
    def on_gpu(self) -> bool: ...
    def option(self, key: str) -> str: ...

def run(input: Union[str, os.PathLike[str]], output: Union[str, os.PathLike[str]],
        progress: Optional[Union[Callable[[int, int, float], Any],
                                 Callable[[int, int, float, Dict[str, Any]], Any]]] = None,
        overwrite: bool = False,
        verbose: bool = False, **options: OptionValue) -> Dict[str, Any]: ...

# (height, width, 3) RGB: uint8 for 8-bit streams, uint16 codes at the stream's depth for deeper
# ones (output_depth=8 gives uint8).
def frames(input: Union[str, os.PathLike[str]], device: str = "cpu",
           **options: OptionValue) -> Iterator[Any]: ...
