"""``python3 -m affine_ucp.ds_to_universal``: DeepSpeed's converter's command
line (``python -m deepspeed.checkpoint.ds_to_universal``), run by
affine-ucp's converter in this process, for projects that call DeepSpeed's
in a subprocess.

The same flags and exit status: 0 when the Universal folder is written, 1
with the error on standard error when it is not (nothing is left at the
output then), 2 for a command line argparse refuses. ``--num_extract_workers``,
``--num_merge_workers`` and ``--keep_temp_folder`` are taken and change
nothing: the conversion runs on threads, every core, with memory bounded by
the largest tensor, and writes no temporary folder. Progress goes to
standard error, a bar on a terminal.
"""

import argparse
import sys
from typing import List, Optional

from ._progress import ProgressReport
from .checkpoints import ds_to_universal

PROGRAM = "python3 -m affine_ucp.ds_to_universal"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: expected a positive count")
    return value


def parse_arguments(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Converts a DeepSpeed ZeRO checkpoint folder to a "
        "Universal Checkpoint, as DeepSpeed's ds_to_universal does, with "
        "affine-ucp's converter.")
    parser.add_argument("--input_folder", required=True,
                        help="the DeepSpeed checkpoint folder, CKPT/TAG")
    parser.add_argument("--output_folder", required=True,
                        help="the new Universal folder, PARENT/NAME "
                        "(PARENT/latest_universal is made to name it)")
    parser.add_argument("--num_extract_workers", type=_positive, default=4,
                        help="taken for DeepSpeed's command line; the "
                        "conversion uses threads on every core")
    parser.add_argument("--num_merge_workers", type=_positive, default=2,
                        help="taken for DeepSpeed's command line; no effect")
    parser.add_argument("--keep_temp_folder", action="store_true",
                        help="taken for DeepSpeed's command line; no "
                        "temporary folder is written")
    parser.add_argument("--no_strict", dest="strict", action="store_false",
                        help="accept universal_checkpoint_info patterns "
                        "that match no parameter")
    parser.add_argument("--inject_missing_state", action="store_true",
                        help="convert a ZeRO-1/2 checkpoint without "
                        "universal_checkpoint_info as one without tensor "
                        "parallelism")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_arguments(argv)
    report = ProgressReport(PROGRAM, "files")
    try:
        done = ds_to_universal(args.input_folder, args.output_folder,
                               inject_missing_state=args.inject_missing_state,
                               strict=args.strict, progress=report)
    except (ValueError, OSError) as error:
        report.close()
        print(f"{PROGRAM}: error: {error}", file=sys.stderr)
        return 1
    report.close()
    for notice in done["notices"]:
        print(f"{PROGRAM}: {notice}", file=sys.stderr)
    print(f"{PROGRAM}: {done['parameters']} parameters, {done['files']} "
          f"files, {done['bytes_written'] / 1e6:.3f} MB of tensors in "
          f"{done['seconds']:.3f} s into {args.output_folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
