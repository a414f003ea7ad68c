#!/usr/bin/env python3
"""Write the text files of one commit of a fetched repository into a plain folder.

The corpus repositories arrive as git snapshots that may lack their largest blobs (pictures,
videos), so `git archive` stops at the first missing object. This copies every blob that is
present and that acclint or a judge reads (sources, launch scripts, configs, docs), and skips the
rest.

    python benchmarks/precision/extract_tree.py GIT_DIR DEST [COMMIT]
"""
import subprocess
import sys
from pathlib import Path

KEEP = {'.py','.sh','.bash','.yaml','.yml','.json','.toml','.cfg','.ini','.txt','.md'}
def extract(gitdir, dest, commit='HEAD'):
    out = subprocess.run(['git','-C',gitdir,'ls-tree','-r','-z',commit], capture_output=True, check=True).stdout
    entries = []
    for rec in out.split(b'\0'):
        if not rec: continue
        meta, path = rec.split(b'\t',1)
        mode, typ, sha = meta.split()
        if typ != b'blob' or mode == b'120000': continue
        p = path.decode('utf-8','surrogateescape')
        if Path(p).suffix.lower() in KEEP or Path(p).name in ('.gitignore','pyproject.toml','setup.cfg'):
            entries.append((sha.decode(), p))
    proc = subprocess.Popen(['git','-C',gitdir,'cat-file','--batch'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    n = 0
    for sha, p in entries:
        proc.stdin.write(sha.encode()+b'\n'); proc.stdin.flush()
        header = proc.stdout.readline().split()
        if header[-1] == b'missing': continue
        size = int(header[2]); data = proc.stdout.read(size); proc.stdout.read(1)
        target = Path(dest)/p
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data); n += 1
    proc.stdin.close(); proc.wait()
    return n
if __name__ == '__main__':
    print(extract(*sys.argv[1:4]), 'files written')
