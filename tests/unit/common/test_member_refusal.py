"""The refusal list's obvious forms beyond `rm -rf /` (issue 12), and the harmless
look-alikes that must still run. The list is a courtesy in front of the sandbox: it
refuses the obvious and says why in one line. What hides a command from it (a variable,
a pipe into a shell, a one-line program, an exotic wrapper) is the kernel's to stop
(issue 31 item 5: tests/unit/sandbox/test_sandbox.py, tests/e2e/test_resource_cleanup.py)."""

from __future__ import annotations

import pytest

from horde_tui.common.refusal import refusal_reason

DESTRUCTIVE = {
    "rm -rf ~/..": "rm-root",
    # the working directory itself, or its parent
    "rm -rf .": "rm-cwd",
    "rm -rf *": "rm-cwd",
    "rm -rf ./*": "rm-cwd",
    "rm -rf ..": "rm-cwd",
    "rm -rf ../*": "rm-cwd",
    # a `cd` first
    "cd / && rm -rf *": "rm-root",
    "cd ~ && rm -rf .": "rm-root",
    "cd /usr; rm -rf ./*": "rm-root",
    "cd .horde && rm -f ledger.jsonl": "ledger",
    "cd .horde && printf '{}\\n' >> ledger.jsonl": "ledger",
    "cd .horde; echo x > IDEAS.md": "ledger",
    "cd .horde/runs && rm -rf *": "ledger",
    "(cd .horde && sed -i s/open/done/ IDEAS.md)": "ledger",
    "pushd .horde && truncate -s0 ledger.jsonl": "ledger",
    "cd sub/../.horde && mv BOARD.md /tmp/": "ledger",
    # find
    "find / -delete": "rm-root",
    "find / -type f -delete": "rm-root",
    "find ~ -name '*' -delete": "rm-root",
    "find /home -exec rm -rf {} +": "rm-root",
    "find / -exec rm -rf {} \\;": "rm-root",
    "find . -delete": "rm-cwd",
    "find .horde -name '*.md' -delete": "ledger",
    "find .horde -exec truncate -s0 {} +": "ledger",
    # substitutions are checked wherever they stand
    'cd "$(rm -rf /)"': "rm-root",
    "X=$(rm -rf ~)": "rm-root",
    # the horde's own processes
    "kill -9 $PPID": "kill-horde",
    "kill $PPID": "kill-horde",
    'kill -TERM "$PPID"': "kill-horde",
    "kill -STOP -$PPID": "kill-horde",
    "kill -9 $HORDE_PARENT_PID": "kill-horde",
    # remote history
    "git push --mirror": "push-delete",
    "git push --mirror origin": "push-delete",
    "git -c core.x=y push --mirror": "push-delete",
    "git push --delete origin main": "push-delete",
    "git push -d origin feature": "push-delete",
    "git push origin :main": "push-delete",
    "git push --prune origin": "push-delete",
    # disks and the kernel
    "blkdiscard /dev/sda": "mkfs",
    "sudo blkdiscard -f /dev/nvme0n1": "mkfs",
    "fdisk /dev/sda": "mkfs",
    "sfdisk /dev/sda < table": "mkfs",
    "parted /dev/sda rm 1": "mkfs",
    "sgdisk --zap-all /dev/sda": "mkfs",
    "echo b > /proc/sysrq-trigger": "device",
    "echo 1 > /proc/sys/kernel/panic": "device",
    "mv / /tmp/root": "rm-root",
    "mv ~ /tmp/gone": "rm-root",
    # wrappers: their options that take a word, then a number
    "sudo -n rm -rf /": "rm-root",
    "nice -n 10 rm -rf /": "rm-root",
    "timeout -s KILL 5 rm -rf /": "rm-root",
    "xargs -n 1 rm -rf ~": "rm-root",
}
"""Command -> the rule that refuses it (the rule's words appear in the line)."""

LOOKALIKES = [
    "rm -rf ./build",
    "rm -rf build/*",
    'rm -rf "$TMPDIR/build"',
    'tmp=$(mktemp -d); rm -rf "$tmp"',
    "cd build && rm -rf *",
    "find . -name '*.pyc' -delete",
    "find build -type f -delete",
    "git push origin feature",
    "git push --set-upstream origin feature",
    'echo "rm -rf /"',
    "printf 'rm -rf /\\n' > notes.txt",
    "python -c \"print('rm -rf /')\"",
    "python -c \"import shutil; shutil.rmtree('build')\"",
    "sleep 30 & kill -9 $!",
    "fdisk -l",
    "taskset -p 1 123",
    "watch -n 1 ls",
    "cd .horde && cat IDEAS.md",
    "cat .horde/IDEAS.md | grep open",
    "cd .horde && grep -c open IDEAS.md > ../counts.txt",
    "awk '{print $(NF)}' data.txt",
    'rm -rf "$(pwd)/build"',
    "python3 -c \"print(open('.horde/IDEAS.md').read())\"",
]

RULE_WORDS = {
    "rm-root": "deletes the filesystem root",
    "rm-cwd": "the whole working directory",
    "ledger": "changes .horde/",
    "kill-horde": "horde's own processes",
    "push-delete": "deletes or mirrors remote",
    "mkfs": "formats or wipes",
    "device": "writes to a device",
}


@pytest.mark.parametrize(("command", "rule"), DESTRUCTIVE.items())
def test_destructive_variant_is_refused(command: str, rule: str) -> None:
    reason = refusal_reason(command)
    assert reason is not None, command
    assert reason.startswith("refused: '") and "\n" not in reason
    assert RULE_WORDS[rule] in reason, reason


@pytest.mark.parametrize("command", LOOKALIKES)
def test_harmless_lookalike_runs(command: str) -> None:
    assert refusal_reason(command) is None
