"""Disks that fail on demand, for the fault tests and the faults benchmark (root only: mount, loop devices).

An ext4 image on a loop device, mounted `errors=remount-ro`, that can:
- turn read-only at once, with files open, as when a disk fails a write (`fail`: an error triggered through
  `/sys/fs/ext4/DEV/trigger_fs_error`; a plain `mount -o remount,ro` is refused while files are open for writing);
- lose everything not yet on disk, as in a power cut (`crash`: the EXT4_IOC_SHUTDOWN ioctl without flushing
  the journal, the way xfstests' `godown` simulates one); mounting it again replays the journal, so what is
  left is what had been synced.
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import time
from pathlib import Path

_EXT4_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32)
_GOING_FLAGS_NOLOGFLUSH = 2  # neither the journal nor the data in the page cache reach the disk
_RELEASE_S = 30.0  # longest wait for the kernel to let go of an unmounted image's loop device


class Ext4:
    """An ext4 file system in `image`, mounted at `mount`."""

    def __init__(self, image: Path, mount: Path) -> None:
        self.image, self.mount = image, mount

    @classmethod
    def make(cls, where: Path, size_mb: int = 64) -> Ext4:
        """A fresh file system of `size_mb` MiB in `where`, mounted at `where/disk`."""
        image, mount = where / "disk.img", where / "disk"
        mount.mkdir()
        with image.open("wb") as f:
            f.truncate(size_mb << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
        disk = cls(image, mount)
        disk.attach()
        return disk

    def attach(self, *options: str) -> None:
        """Mount it (again), with extra mount options such as `ro`."""
        opts = ",".join(["loop", "errors=remount-ro", *options])
        subprocess.run(["mount", "-o", opts, str(self.image), str(self.mount)], check=True)

    def detach(self) -> None:
        """Unmount it (nothing may have files open on it), and wait until its loop device is gone.

        The kernel may let go of an unmounted image's loop device after `umount` returns (autoclear runs on a
        work queue), and a `mount -o loop` of the same image meanwhile reuses that device: cleared under the new
        mount, every call on it fails with EIO. A power-cut test's restart once failed so in a CI run (not
        reproduced at rest: 15 crash-and-umount cycles never left the device behind); this wait rules it out."""
        subprocess.run(["umount", str(self.mount)], check=True)
        deadline = time.monotonic() + _RELEASE_S
        while self._loops():
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{self.image} is still on loop device(s) {self._loops()} {_RELEASE_S:.0f} s after umount"
                )
            time.sleep(0.05)

    def _loops(self) -> str:
        """The loop devices backed by the image (`losetup -j`), or ""."""
        return subprocess.run(
            ["losetup", "-j", str(self.image)], check=True, capture_output=True, text=True
        ).stdout.strip()

    def release(self) -> None:
        """Unmount it whatever holds it (for clean-ups)."""
        subprocess.run(["umount", "-l", str(self.mount)], check=False, capture_output=True)

    def fail(self) -> None:
        """What a disk error does: ext4 records it and turns the file system read-only at once."""
        source = subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(self.mount)], check=True, capture_output=True)
        device = Path(source.stdout.decode().strip()).name
        Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("groove fault\n")

    def crash(self) -> None:
        """A power cut: from now on every operation fails, and what was not synced is gone once it is mounted
        again."""
        fd = os.open(self.mount, os.O_RDONLY)
        try:
            fcntl.ioctl(fd, _EXT4_IOC_SHUTDOWN, struct.pack("I", _GOING_FLAGS_NOLOGFLUSH))
        finally:
            os.close(fd)

    def check(self) -> None:
        """e2fsck, as an operator does before mounting it again (status 1: errors found and fixed)."""
        fsck = subprocess.run(["e2fsck", "-fy", str(self.image)], check=False, capture_output=True, text=True)
        if fsck.returncode not in (0, 1):
            raise RuntimeError(f"e2fsck exited {fsck.returncode}: {fsck.stdout[-500:]}{fsck.stderr[-500:]}")
