#!/bin/sh
# Runs a sandbox test program as an ordinary user: root drops to `nobody` with setpriv,
# giving it a scratch directory and a directory of its own under /run (which it could not
# make). Exit 77 (Meson's skip) with the reason when that cannot be done here.
set -eu
program=$1
if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: already unprivileged (uid $(id -u)): sandbox-probes ran as this user" >&2
  exit 77
fi
command -v setpriv >/dev/null || { echo "skipped: setpriv (util-linux) is not installed" >&2; exit 77; }
uid=$(id -u nobody 2>/dev/null) || { echo "skipped: no user 'nobody' to drop to" >&2; exit 77; }
gid=$(id -g nobody)

scratch=$(mktemp -d "${DSHPTY_SANDBOX_SCRATCH:-/var/tmp}/unprivileged-XXXXXX")
rundir=$(mktemp -d /run/dshpty-probe-XXXXXX)
trap 'rm -rf "$scratch" "$rundir"' EXIT
chown "$uid:$gid" "$scratch" "$rundir"
chmod 755 "$scratch"

# The user must reach the program, the helper and the probe through their directories.
for path in "$program" "${DSHPTY_SUPERVISOR:-}" "${DSHPTY_SANDBOX_PROBE:-}"; do
  [ -z "$path" ] && continue
  if ! setpriv --reuid="$uid" --regid="$gid" --clear-groups test -r "$path"; then
    echo "skipped: $path is not readable by nobody (a build tree in a private directory)" >&2
    exit 77
  fi
done

status=0
setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all \
  env HOME="$scratch" DSHPTY_SANDBOX_SCRATCH="$scratch" DSHPTY_PROBE_RUN_DIR="$rundir" \
  "$program" || status=$?
exit $status
