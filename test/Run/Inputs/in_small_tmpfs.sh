#!/bin/sh
# Runs COMMAND with a tmpfs of SIZE mounted at DIR, writes what is left in
# DIR afterwards to LISTING, unmounts it whatever the outcome, and exits
# with the command's status (125 if the tmpfs cannot be mounted).
#
#   in_small_tmpfs.sh SIZE DIR LISTING COMMAND [ARG...]
size=$1 dir=$2 listing=$3
shift 3
mkdir -p "$dir" && mount -t tmpfs -o "size=$size" tmpfs "$dir" || exit 125
"$@"
status=$?
ls -A "$dir" > "$listing"
umount "$dir"
exit $status
