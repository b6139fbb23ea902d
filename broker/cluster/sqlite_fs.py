"""Refuse to put the sqlite metadata store on a network filesystem.

sqlite's WAL mode needs shared memory and POSIX locks that behave on one host; on
NFS, SMB/CIFS or FUSE network mounts they silently do not, and two brokers could
both win the same compare-and-set. We detect the filesystem type of the database's
directory from ``/proc/mounts`` (Linux) and fail loudly. Where ``/proc/mounts`` is
absent the check cannot be made and is skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.cluster.store import UnsupportedFilesystemError

NETWORK_FILESYSTEM_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb",
        "smb2",
        "smb3",
        "smbfs",
        "ncpfs",
        "afs",
        "9p",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "fuse.sshfs",
        "fuse.glusterfs",
        "fuse.cephfs",
        "fuse.s3fs",
        "fuse.rclone",
        "fuse.gcsfuse",
        "davfs",
        "fuse.davfs2",
    }
)


def _unescape_mount_field(field: str) -> str:
    """/proc/mounts escapes space, tab, newline and backslash as octal (``\\040``)."""
    for escaped, plain in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(escaped, plain)
    return field


def filesystem_type(path: Path, mounts_text: str) -> str | None:
    """The fs type of the mount holding ``path`` (longest matching mount point)."""
    resolved = str(path)
    best_mount_point, best_type = "", None
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        mount_point, fs_type = _unescape_mount_field(fields[1]), fields[2]
        inside = resolved == mount_point or resolved.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best_mount_point):
            best_mount_point, best_type = mount_point, fs_type
    return best_type


def is_network_filesystem(fs_type: str | None) -> bool:
    return fs_type is not None and (fs_type in NETWORK_FILESYSTEM_TYPES or fs_type.startswith("nfs"))


def ensure_local_filesystem(db_path: Path, mounts_file: Path = Path("/proc/mounts")) -> None:
    """Raise ``UnsupportedFilesystemError`` if ``db_path`` is on a network filesystem."""
    if not mounts_file.exists():
        return
    directory = db_path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    fs_type = filesystem_type(Path(os.path.realpath(directory)), mounts_file.read_text())
    if is_network_filesystem(fs_type):
        raise UnsupportedFilesystemError(
            f"{db_path} is on a {fs_type} filesystem; the sqlite metadata store works on "
            f"one host's local disk only (its locks are unsafe over the network). "
            f"Put it on a local disk, or use an etcd:// store for a multi-host cluster."
        )
