"""Type stubs of affine_ucp._core, the C++ extension."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

Progress = Optional[Callable[[int, int, int], None]]

class Piece:
    shape: List[int]
    source_offset: int
    source_strides: List[int]
    dest_offset: int
    dest_strides: List[int]
    locations: List[int]
    scale: float
    def __init__(self, shape: Sequence[int], source_offset: int,
                 source_strides: Sequence[int], dest_offset: int,
                 dest_strides: Sequence[int], locations: Sequence[int],
                 scale: float = 1.0) -> None: ...

class Shard:
    rank: int
    shape: List[int]
    pieces: List[Piece]
    def __init__(self, rank: int, shape: Sequence[int],
                 pieces: Sequence[Piece]) -> None: ...

class ParamMap:
    name: str
    logical_shape: List[int]
    world_size: int
    shards: List[Shard]
    original_vocab_size: Optional[int]
    def __init__(self, name: str, logical_shape: Sequence[int],
                 world_size: int, shards: Sequence[Shard],
                 original_vocab_size: Optional[int] = None) -> None: ...

class Segment:
    shape: List[int]
    source_rank: int
    source_offset: int
    source_strides: List[int]
    target_rank: int
    target_offset: int
    target_strides: List[int]
    scale: float

class Fill:
    rank: int
    shape: List[int]
    target_offset: int
    target_strides: List[int]

class TransferPlan:
    name: str
    source_world: int
    target_world: int
    source_shards: Dict[int, List[int]]
    target_shards: Dict[int, List[int]]
    segments: List[Segment]
    fills: List[Fill]

class CopyProgram:
    source_elements: Dict[int, int]
    target_elements: Dict[int, int]
    copies: int

class DeepSpeedCheckpoint:
    folder: str
    tp_degree: int
    dp_degree: int
    zero_stage: int
    autoep_size: int
    is_universal: bool
    params: List[dict]
    @staticmethod
    def open(folder: str) -> "DeepSpeedCheckpoint": ...
    @staticmethod
    def open_universal(folder: str) -> "DeepSpeedCheckpoint": ...

def parse_maps(text: str) -> List[ParamMap]: ...
def write_maps(maps: Sequence[ParamMap]) -> str: ...
def verify(map: ParamMap) -> dict: ...
def canonicalize(map: ParamMap) -> ParamMap: ...
def summarize(maps: Sequence[ParamMap]) -> str: ...
def full_tensor_map(map: ParamMap) -> ParamMap: ...

def shard_sizes(total: int, tp: int, num_kv_heads: Optional[int] = None,
                grain_size: int = 1, name: str = "") -> List[int]: ...
def replicated_layout(name: str, shape: Sequence[int], tp: int,
                      scale: float = 1.0) -> ParamMap: ...
def scaled_bias_layout(name: str, shape: Sequence[int], tp: int) -> ParamMap: ...
def split_layout(name: str, shape: Sequence[int], dim: int,
                 sizes: Sequence[int]) -> ParamMap: ...
def sub_param_layout(name: str, shape: Sequence[int], dim: int,
                     widths: Sequence[Sequence[int]]) -> ParamMap: ...
def split_sub_param_layout(name: str, shape: Sequence[int], dim: int,
                           sub_sizes: Sequence[int], tp: int,
                           num_kv_heads: Optional[int] = None,
                           grain_size: int = 1) -> ParamMap: ...
def padded_vocab_layout(name: str, vocab: int, hidden: int,
                        tp: int) -> ParamMap: ...
def bigcode_layout(name: str, q_rows: int, kv_rows: int, cols: int,
                   tp: int) -> ParamMap: ...
def codegen_layout(name: str, hidden: int, cols: int, tp: int,
                   mp_num: int = 4) -> ParamMap: ...
def yuan_layout(name: str, shape: Sequence[int], dim: int, tp: int,
                num_heads: int) -> ParamMap: ...
def block_layout(name: str, shape: Sequence[int], dim: int,
                 runs: Sequence[Sequence[Tuple[int, int]]],
                 scale: float = 1.0) -> ParamMap: ...
def expert_layout(name: str, num_experts: int,
                  experts: Sequence[Sequence[int]],
                  expert_shape: Sequence[int]) -> ParamMap: ...
def flat_range_layout(name: str, shape: Sequence[int],
                      sizes: Sequence[int]) -> ParamMap: ...
def nest(outer: ParamMap, inner: Sequence[ParamMap]) -> ParamMap: ...

def compose(sources: Sequence[ParamMap], targets: Sequence[ParamMap],
            policy: str = "local", ranks_per_node: int = 8,
            source_processes: Sequence[int] = (),
            target_processes: Sequence[int] = ()) -> List[TransferPlan]: ...
def write_plans(plans: Sequence[TransferPlan]) -> str: ...
def parse_plans(text: str) -> List[TransferPlan]: ...
def summarize_plans(plans: Sequence[TransferPlan]) -> str: ...
# A tensor's state -> the power of the scale it carries.
state_scale_powers: Dict[str, int]
def lower(plan: TransferPlan) -> CopyProgram: ...
def program_into(program: CopyProgram, target: int) -> CopyProgram: ...
def execute(program: CopyProgram, sources: Dict[int, Tuple[int, int]],
            targets: Dict[int, Tuple[int, int]], dtype: str,
            threads: int = 0, name: str = "",
            scale_power: int = 1) -> None: ...
def check_replicas(map: ParamMap, shards: Dict[int, int],
                   element_size: int) -> None: ...

# Large outputs: buffers of the caching allocator, kept for reuse when
# freed (buffer protocol: torch.frombuffer, numpy.frombuffer).
class OutputBuffer:
    def __buffer__(self, flags: int) -> memoryview: ...
def allocate_output(bytes: int) -> Optional[OutputBuffer]: ...
def set_cache_limit(bytes: int) -> None: ...
def empty_cache() -> None: ...
def cache_limit() -> int: ...
def cached_bytes() -> int: ...

# Across the processes of an mpi4py communicator; MpiItem and execute_mpi
# exist where has_mpi is true.
has_mpi: bool
class MpiItem:
    def __init__(self, program: CopyProgram,
                 sources: Dict[int, Tuple[int, int]],
                 targets: Dict[int, Tuple[int, int]], dtype: str,
                 name: str, scale_power: int = 1) -> None: ...
def execute_mpi(comm: Any, items: Sequence[MpiItem],
                source_processes: Sequence[int],
                target_processes: Sequence[int], threads: int = 0,
                timeout: float = 300.0) -> None: ...

def ds_to_universal(checkpoint: DeepSpeedCheckpoint, output: str,
                    threads: int = 0, inject_missing_state: bool = False,
                    strict: bool = True, progress: Progress = None) -> dict: ...
def retarget(checkpoint: DeepSpeedCheckpoint, output: str, dp: int,
             tp: Optional[int] = None, zero_stage: Optional[int] = None,
             autoep_size: Optional[int] = None, threads: int = 0,
             progress: Progress = None) -> dict: ...
def export_model(checkpoint: DeepSpeedCheckpoint, out: str,
                 dtype: str = "f32", max_shard_bytes: int = 5000000000,
                 exclude_frozen: bool = False,
                 progress: Progress = None) -> dict: ...
def parse_shard_size(text: str) -> int: ...
def read_safetensors(path: str) -> Dict[str, Tuple[str, List[int], bytes]]: ...
