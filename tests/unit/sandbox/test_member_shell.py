"""Member shell commands: the refusal list, the scrubbed environment, bounded output,
timeouts that kill the whole process group, and exit statuses, with real processes."""

from __future__ import annotations

import os
import shlex
import signal
import time
from pathlib import Path

import pytest

from horde_tui.sandbox.shell import (
    refusal_reason,
    run_command,
    scrubbed_env,
    signal_command_groups,
    truncate_output,
)

DESTRUCTIVE = [
    "rm -rf /",
    "rm -fr /",
    "rm -rf /*",
    "rm -rf ~",
    "rm -rf ~/",
    "rm -rf $HOME",
    'rm -rf "$HOME/"',
    "rm  -r   -f    /",
    "rm -rf /usr",
    "rm -rf /work/../",
    "rm --no-preserve-root -rf /",
    "sudo rm -rf /",
    "sudo -u root rm -rf /",
    "/bin/rm -rf /",
    "ls; rm -rf /",
    "make && rm -rf /",
    "echo | rm -rf /",
    "cd /tmp\nrm -rf /",
    'bash -c "rm -rf /"',
    "sh -lc 'cd x && rm -rf ~/*'",
    "bash -c \"bash -c 'rm -rf /'\"",
    "eval 'rm -rf /'",
    "echo $(rm -rf /)",
    'echo "$(rm -rf /)"',
    "echo `rm -rf /`",
    "(rm -rf /)",
    "{ rm -rf /; }",
    "env -i A=1 rm -rf /",
    "timeout 5 rm -rf /",
    "nohup rm -rf / &",
    "X=1 rm -rf /",
    "mkfs /dev/sdb",
    "mkfs.ext4 /dev/sda1",
    "sudo mkfs.xfs /dev/nvme0n1p1",
    "echo x > /dev/sda",
    "cat image >> /dev/nvme0n1",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "sudo dd of=/dev/sdb if=disk.img",
    "tee /dev/sda < image",
    "shutdown -h now",
    "sudo reboot",
    "halt",
    "poweroff",
    "init 0",
    "init 6",
    "systemctl reboot",
    "chmod -R 777 /",
    "chmod -R 777 ~",
    "chown -R me:me /",
    "git push -f",
    "git push --force origin main",
    "git push --force-with-lease",
    "git push origin +main",
    "git -C repo push -uf origin main",
    "crontab -r",
    "crontab -u me -r",
    "kill -9 -1",
    "kill -KILL -1",
    "kill -s KILL -1",
    "kill -- -1",
    "pkill python",
    "killall -9 python3",
    "pkill -f horde",
    "pkill -f .",
    "rm -rf .horde",
    "rm .horde/ledger.jsonl",
    "echo '{}' >> .horde/ledger.jsonl",
    "sed -i 's/open/done/' .horde/IDEAS.md",
    "mv .horde/BOARD.md /tmp/",
    "truncate -s 0 .horde/ledger.jsonl",
    "cp forged.md .horde/FINDINGS.md",
    ":(){ :|:& };:",
    ":(){:|:&};:",
    "bomb(){ bomb|bomb& };bomb",
    "horde-tui",
    "horde-tui run 4 'audit the parser'",
    "horde-tui plan 3 'a; b; c'",
    "horde-tui demo",
    "python3 -m horde_tui run 2 task",
    "uv run horde-tui run 2 task",
    "horde-tui stop-hard all",
    "horde-tui pause member-2",
]

ORDINARY = [
    "rm -rf build/",
    "rm -rf /tmp/horde-test-dir",
    "rm -rf ~/project/build",
    "rm -f *.pyc",
    "grep -r shutdown .",
    "grep -rn 'rm -rf /' docs",
    "echo 'rm -rf /'",
    "git commit -m 'fix reboot loop; force push is not needed'",
    "git push",
    "git push origin main",
    "git push -u origin feature",
    "git push --follow-tags",
    "kill 1234",
    "kill -9 1234",
    "dd if=a of=b",
    "dd if=/dev/zero of=/dev/null count=1",
    "ls > /dev/null 2>&1",
    "cat /dev/sda | head -c 10",
    "chmod -R 755 build",
    "chmod 644 /tmp/x",
    "crontab -l",
    "pkill -f 'http.server 8000'",
    "systemctl status nginx",
    "find . -name '*.py' | xargs grep -n reboot",
    "python -m pytest -x",
    "./init_db.sh 0",
    "horde-tui tool post --text 'run is going'",
    "horde-tui --version",
    "cat .horde/BOARD.md",
    "cp .horde/FINDINGS.md notes.md",
    "grep -c claim .horde/ledger.jsonl > counts.txt",
    "rm -rf .hordes-backup",
    "echo 'unbalanced",
]


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_destructive_command_is_refused(command: str) -> None:
    reason = refusal_reason(command)
    assert reason is not None
    assert reason.startswith("refused: '")
    assert "(shell refusal list); " in reason
    assert "\n" not in reason


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_command_is_allowed(command: str) -> None:
    assert refusal_reason(command) is None


def test_refusal_names_the_command_and_what_to_do_instead() -> None:
    assert refusal_reason("sudo  rm -rf /") == (
        "refused: 'sudo rm -rf /' deletes the filesystem root, a top-level directory or a "
        "home directory (shell refusal list); delete only specific paths inside the working "
        "directory"
    )
    assert "members may not" in (refusal_reason("horde-tui run 3 x") or "")


def test_shells_nested_past_the_checked_depth_are_refused() -> None:
    command = "ls"
    for depth in range(1, 7):
        command = f"bash -c {shlex.quote(command)}"
        reason = refusal_reason(command)
        assert (reason is None) == (depth <= 4), depth
    assert "nests shells more than 4 levels deep" in (reason or "")


def test_refused_command_does_not_run(tmp_path: Path) -> None:
    result = run_command("touch made && rm -rf /", tmp_path)
    assert result.refused is not None
    assert result.output == result.refused
    assert result.exit_code is None
    assert not (tmp_path / "made").exists()


def test_scrubbed_env_drops_secrets_and_keeps_the_member_identity() -> None:
    env = scrubbed_env(
        {
            "PATH": "/usr/bin",
            "HOME": "/home/me",
            "OPENAI_API_KEY": "sk-1",
            "OPENAI_BASE_URL": "https://x",
            "ANTHROPIC_AUTH": "a",
            "AWS_REGION": "eu",
            "my_service_token": "t",
            "DB_PASSWORD": "p",
            "GITHUB_TOKEN": "g",
            "HF_TOKEN": "h",
            "GOOGLE_APPLICATION_CREDENTIALS": "/k.json",
            "HORDE_GATEWAY_URL": "http://127.0.0.1:1",
            "HORDE_GATEWAY_TOKEN": "gt",
            "HORDE_API_KEY": "k",
            "HORDE_MEMBER": "member-3",
            "HORDE_DIR": "/w/.horde",
            "HORDE_RUN": "r1",
            "HORDE_ROLE": "verifier",
            "PAGER": "less",
        }
    )
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "HORDE_MEMBER": "member-3",
        "HORDE_DIR": "/w/.horde",
        "HORDE_RUN": "r1",
        "HORDE_ROLE": "verifier",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "TERM": "dumb",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_EDITOR": "true",
    }


def test_command_environment_has_no_keys(tmp_path: Path) -> None:
    given = {
        "PATH": os.environ["PATH"],
        "OPENAI_API_KEY": "sk-secret-1",
        "HORDE_GATEWAY_TOKEN": "secret-2",
        "MY_SERVICE_TOKEN": "secret-3",
        "HORDE_MEMBER": "member-7",
    }
    result = run_command("env", tmp_path, env=given)
    assert result.exit_code == 0
    assert "secret" not in result.output
    assert "HORDE_MEMBER=member-7" in result.output
    assert "PAGER=cat" in result.output


def test_truncate_output_keeps_head_and_tail_and_counts_the_cut() -> None:
    text = "".join(f"line {i}\n" for i in range(10_000))
    cut = truncate_output(text, 2_000)
    assert len(cut) <= 2_000
    assert cut.startswith("line 0\nline 1\n")
    assert cut.endswith("line 9998\nline 9999\n")
    head, marker, tail = cut.partition("[... ")
    chars = int(marker and tail.split(" characters")[0])
    assert chars == len(text) - len(head) - len(tail.split("...]\n", 1)[1])
    assert "lines) cut ...]\n" in tail
    assert truncate_output("short", 2_000) == "short"


def test_large_output_neither_deadlocks_nor_grows_memory(tmp_path: Path) -> None:
    start = time.monotonic()
    result = run_command("seq 1 700000", tmp_path, limit=4_000)  # about 4.8 MB
    assert time.monotonic() - start < 10
    assert result.exit_code == 0
    body, _, status = result.output.rpartition("\n[")
    assert status.startswith("exit 0 in")
    assert body.startswith("1\n2\n3\n")
    assert body.endswith("\n699999\n700000")
    total = sum(len(f"{i}\n") for i in range(1, 700_001))
    kept = body.split("[... ")[0] + body.split(" cut ...]\n")[1] + "\n"
    cut = int(body.split("[... ")[1].split(" characters")[0])
    assert cut + len(kept) == total
    assert len(result.output) < 4_100


def test_stdout_and_stderr_interleave_and_exit_codes_come_back(tmp_path: Path) -> None:
    result = run_command("echo out; echo err >&2; echo again; exit 3", tmp_path)
    assert result.exit_code == 3
    assert result.output.startswith("out\nerr\nagain\n[exit 3 in ")
    assert not result.timed_out


def test_signal_death_is_reported_as_shell_status(tmp_path: Path) -> None:
    result = run_command("kill -SEGV $$", tmp_path)
    assert result.exit_code == 128 + signal.SIGSEGV
    assert "[killed by SIGSEGV in " in result.output


def test_command_runs_in_cwd_without_stdin(tmp_path: Path) -> None:
    result = run_command("pwd; cat; echo done", tmp_path, timeout_s=10)
    assert result.output.startswith(f"{tmp_path}\ndone\n")


def _running(pid: int) -> bool:
    """Alive and not a zombie (an init that reaps late must not fail the test)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _gone(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    start = time.monotonic()
    result = run_command("sleep 300 & echo $!; sleep 300 & echo $!; wait", tmp_path, timeout_s=1)
    assert time.monotonic() - start < 4
    assert result.timed_out
    assert result.exit_code is None
    assert result.output.endswith("[timed out after 1s; process group killed]")
    children = [int(line) for line in result.output.splitlines()[:2]]
    assert all(_gone(pid) for pid in children)


def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    start = time.monotonic()
    result = run_command("trap '' TERM; sleep 300 & echo $!; wait", tmp_path, timeout_s=0.5)
    assert result.timed_out
    assert time.monotonic() - start < 5
    assert _gone(int(result.output.splitlines()[0]))


def test_background_process_is_left_running_and_reachable(tmp_path: Path) -> None:
    result = run_command("sleep 300 & echo $!", tmp_path, timeout_s=30)
    pid = int(result.output.splitlines()[0])
    try:
        assert result.exit_code == 0
        assert "background processes are still running" in result.output
        assert _running(pid)
        assert signal_command_groups(signal.SIGKILL) >= 1
        assert _gone(pid)
    finally:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def test_how_long_a_command_took_does_not_make_its_result_new() -> None:
    """The loop guard compares results: `echo hi` run again is the same result though it
    took 0.3 s under load instead of 0.0 s (its status line says how long it ran)."""
    from horde_tui.sandbox.shell import comparable

    fast, slow = run_command("echo hi", Path.cwd()), run_command("sleep 0.2; echo hi", Path.cwd())
    assert fast.output != slow.output  # the status lines differ: "in 0.0s" and "in 0.2s"
    assert comparable(fast.output) == comparable(slow.output) == "hi\n[exit 0]"
    assert comparable("hi\n[exit 1 in 0.0s]") != comparable("hi\n[exit 0 in 0.0s]")
