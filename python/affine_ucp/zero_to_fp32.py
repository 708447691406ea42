"""``python3 -m affine_ucp.zero_to_fp32``: the command line of DeepSpeed's
``zero_to_fp32.py`` (the script ``save_checkpoint`` copies beside each
checkpoint), run by affine-ucp's export in this process: the consolidated
fp32 model of a checkpoint, as safetensors files.

``CHECKPOINT_DIR`` is the folder holding the tags (and ``latest``), or a tag
folder itself; ``-t TAG`` picks a tag. The model goes to ``OUTPUT_DIR``
(new) as ``model.safetensors``, or beyond ``--max_shard_size`` as
``model-0000i-of-0000N.safetensors`` with ``model.safetensors.index.json``,
the names DeepSpeed gives them. affine-ucp writes safetensors only:
``--safe_serialization`` is required, where DeepSpeed without it pickles
``pytorch_model.bin`` files. ``--dtype`` (fp32 by default) rounds to bf16
or fp16 to nearest even. ``-d`` is taken and changes nothing. Exit status
0 on success, 1 with the error on standard error, 2 for a command line it
refuses; nothing is left at the output of a run that fails.
"""

import argparse
import os
import sys
from typing import List, Optional

from . import _core
from ._progress import ProgressReport
from .checkpoints import export

PROGRAM = "python3 -m affine_ucp.zero_to_fp32"


def parse_arguments(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Writes the consolidated fp32 model of a DeepSpeed "
        "checkpoint as safetensors files, as DeepSpeed's zero_to_fp32.py "
        "does, with affine-ucp's export.")
    parser.add_argument("checkpoint_dir",
                        help="the checkpoint folder (holding the tags and "
                        "latest), or a tag folder")
    parser.add_argument("output_dir", help="the new folder of the model")
    parser.add_argument("--max_shard_size", default="5GB",
                        help="the most tensor bytes per file, as 5GB or "
                        "500MB (default 5GB)")
    parser.add_argument("--safe_serialization", action="store_true",
                        help="write safetensors files (required: affine-ucp "
                        "writes no pickled pytorch_model.bin)")
    parser.add_argument("-t", "--tag", default=None,
                        help="the tag to read (default: the one latest "
                        "names)")
    parser.add_argument("--exclude_frozen_parameters", action="store_true",
                        help="leave out the frozen parameters")
    parser.add_argument("--dtype", default="fp32",
                        help="the floating tensors' dtype: fp32 (default), "
                        "bf16 or fp16")
    parser.add_argument("-d", "--debug", action="store_true",
                        help="taken for DeepSpeed's command line; no effect")
    args = parser.parse_args(argv)
    if not args.safe_serialization:
        parser.error("affine-ucp writes safetensors files only, which "
                     "transformers and torch load as they load "
                     "pytorch_model.bin: pass --safe_serialization")
    try:
        args.max_shard_bytes = _core.parse_shard_size(args.max_shard_size)
    except ValueError as error:
        parser.error(f"--max_shard_size: {error}")
    return args


def find_tag_folder(checkpoint_dir: str, tag: Optional[str]) -> str:
    """The tag folder to read: `tag`'s, the one `latest` names, or the
    folder itself when it holds a checkpoint and no `latest`."""
    if tag is not None:
        return os.path.join(checkpoint_dir, tag)
    latest = os.path.join(checkpoint_dir, "latest")
    if os.path.isfile(latest):
        with open(latest, encoding="utf-8") as f:
            # A tag's name, not a file to read whole whatever its size.
            return os.path.join(checkpoint_dir, f.read(4096).strip())
    return checkpoint_dir


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_arguments(argv)
    report = ProgressReport(PROGRAM, "tensors")
    try:
        folder = find_tag_folder(args.checkpoint_dir, args.tag)
        done = export(folder, args.output_dir, dtype=args.dtype,
                      max_shard_bytes=args.max_shard_bytes,
                      exclude_frozen=args.exclude_frozen_parameters,
                      progress=report)
    except (ValueError, OSError) as error:
        report.close()
        print(f"{PROGRAM}: error: {error}", file=sys.stderr)
        return 1
    report.close()
    print(f"{PROGRAM}: {done['tensors']} tensors of {folder}, "
          f"{done['files']} file{'s' if done['files'] != 1 else ''}, "
          f"{done['bytes_written'] / 1e6:.3f} MB in {done['seconds']:.3f} s "
          f"into {args.output_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
