"""Shell completion: the scripts for bash, zsh and fish, and completions answered through
argcomplete's own protocol (the CLI run with `_ARGCOMPLETE=1`, `COMP_LINE`, `COMP_POINT`
and its answer on fd 8), as a shell asks for them."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.cli import cli, cli_argv, host_env
from support.rundir import RunDir

from horde_tui.commands.completion import attach_completers, complete_presets

OLD = "20260102-120000-aaaa"
NEW = "20260103-090000-bbbb"


def complete(cwd: Path, line: str) -> list[str]:
    """What `horde-tui` answers a shell completing the end of `line` in `cwd`."""
    with tempfile.TemporaryFile() as answer:
        fd = answer.fileno()
        done = subprocess.run(
            cli_argv(),
            cwd=cwd,
            env=host_env(_ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line))),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            close_fds=False,
            preexec_fn=lambda: os.dup2(fd, 8),
        )
        assert done.returncode == 0, done.stderr
        answer.seek(0)
        text = answer.read().decode()
    return sorted(word.strip() for word in text.split("\x0b") if word.strip())


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_a_script_for_each_shell(tmp_path: Path, shell: str) -> None:
    done = cli(tmp_path, "completion", shell)
    assert done.returncode == 0, done.stderr
    script = done.stdout
    assert "horde-tui" in script and "_ARGCOMPLETE" in script
    if shell == "fish":
        assert "complete " in script and "commandline" in script
    else:
        assert script.startswith("#compdef horde-tui")
    checker = shutil.which(shell)
    if checker is not None:  # the script at least parses in that shell
        path = tmp_path / f"horde-tui.{shell}"
        path.write_text(script)
        parsed = subprocess.run([checker, "-n", str(path)], capture_output=True, text=True)
        assert parsed.returncode == 0, parsed.stderr


def test_an_unknown_shell_is_bad_usage(tmp_path: Path) -> None:
    assert cli(tmp_path, "completion", "tcshh").returncode == 2


def test_subcommands_complete(tmp_path: Path) -> None:
    assert complete(tmp_path, "horde-tui doc") == ["doctor"]
    assert {"init", "completion", "attach"} <= set(complete(tmp_path, "horde-tui "))


def test_a_run_id_completes(tmp_path: Path) -> None:
    RunDir(tmp_path / ".horde", OLD)
    RunDir(tmp_path / ".horde", NEW)
    assert complete(tmp_path, "horde-tui attach 2026") == [OLD, NEW]
    assert complete(tmp_path, "horde-tui finalize 20260103") == [NEW]
    assert complete(tmp_path, "horde-tui status --run 20260102") == [OLD]
    assert complete(tmp_path, "horde-tui share 2026") == [OLD, NEW]
    assert complete(tmp_path, "horde-tui share l") == ["last"]
    assert complete(tmp_path, "horde-tui replay la") == ["last"]


def test_member_targets_complete_from_the_live_run(tmp_path: Path) -> None:
    run = RunDir(tmp_path / ".horde", NEW, members=4)
    run.live(os.getpid())  # this test process stands in for the live supervisor
    assert complete(tmp_path, "horde-tui pause mem") == [f"member-{n}" for n in range(1, 5)]
    assert "all" in complete(tmp_path, "horde-tui stop-clean ")
    # resume also carries on runs by id, and one member's session of a named run
    assert NEW in complete(tmp_path, "horde-tui resume 2026")
    RunDir(tmp_path / ".horde", OLD, members=2)
    assert complete(tmp_path, f"horde-tui resume {OLD} --mem") == ["--member"]
    assert complete(tmp_path, f"horde-tui resume {OLD} --member ") == ["member-1", "member-2"]


def test_preset_names_from_the_project_and_their_completer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    presets = tmp_path / ".horde" / "presets"
    presets.mkdir(parents=True)
    (presets / "my-audit.toml").write_text('description = "mine"\n')
    (presets / "notes.txt").write_text("not a preset")
    parser = argparse.ArgumentParser()
    run = parser.add_subparsers(dest="command").add_parser("run")
    preset = run.add_argument("--preset")
    attach_completers(parser)
    monkeypatch.chdir(tmp_path)
    assert preset.completer is complete_presets  # type: ignore[attr-defined]
    assert complete_presets("sec") == ["security-review"]  # bundled
    assert complete_presets("my") == ["my-audit"]  # the project's
    assert complete_presets("no") == []


def test_tool_never_imports_argcomplete(tmp_path: Path) -> None:
    """The member's hot path: argcomplete loads only while a shell completes."""
    code = (
        "import sys; from horde_tui.commands.cli import main; code = main(['tool', 'list']); "
        "print('argcomplete' in sys.modules, file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=host_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False"


BASH_DRIVER = r"""
eval "$(horde-tui completion bash)"
line="$1"
read -ra COMP_WORDS <<< "$line"
[[ "$line" == *" " ]] && COMP_WORDS+=("")
COMP_LINE="$line" COMP_POINT=${#line} COMP_TYPE=9 COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
complete -p horde-tui >/dev/null  # the script registered its function
_python_argcomplete horde-tui "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"""
"""What bash's programmable completion does on Tab: the registered function, called with
the line readline hands it. An empty answer is where bash falls back to file names."""


ZSH_DRIVER = r"""
autoload -U compinit && compinit -u -D
eval "$(horde-tui completion zsh)"
_describe() { print -rl -- "${(@P)2}" }  # what zsh would offer, one `word:help` a line
BUFFER="$1" CURSOR=${#1}
words=(${(z)BUFFER}); [[ "$BUFFER" == *" " ]] && words+=("")
_python_argcomplete
"""
"""zsh's side: the script's completion function with the line as the editor holds it;
`_describe` (which would show the menu) prints what it was given."""


def _shell_env() -> dict[str, str]:
    return host_env(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def shell_complete(shell: str, cwd: Path, line: str) -> list[str]:
    """The words a real `shell` offers for Tab at the end of `line`, in `cwd`."""
    found = shutil.which(shell)
    if found is None:
        pytest.skip(f"{shell} is not installed here (.ci/run installs bash and fish)")
    if shell == "bash":
        argv = [found, "-c", BASH_DRIVER, "bash", line]
    elif shell == "zsh":
        argv = [found, "-f", "-c", ZSH_DRIVER, "zsh", line]
    else:  # fish asks its own completion machinery, as on Tab
        argv = [found, "-c", 'horde-tui completion fish | source; complete -C"$argv[1]"', line]
    done = subprocess.run(
        argv, cwd=cwd, env=_shell_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    words = (w.split("\t")[0] for w in done.stdout.splitlines() if w.strip())
    if shell == "zsh":  # `word:help`, a colon in the word escaped
        words = (re.split(r"(?<!\\):", w)[0].replace("\\:", ":") for w in words)
    return sorted({w.strip() for w in words})


SHELLS = ["bash", "zsh", "fish"]


@pytest.mark.parametrize("shell", SHELLS)
def test_a_real_shell_completes_actions_and_run_ids(tmp_path: Path, shell: str) -> None:
    """`tool <Tab>` offers the actions (not the files here) and a command that takes a run
    offers run ids: the script wired into each real shell (each Tab is a `horde-tui`
    start, about a second on a loaded machine: the rest of the lines are `slow`)."""
    from horde_tui.protocol.schema import action_names

    (tmp_path / "listing.txt").write_text("a file Tab must not offer for an action\n")
    RunDir(tmp_path / ".horde", OLD)
    RunDir(tmp_path / ".horde", NEW)
    offered = shell_complete(shell, tmp_path, "horde-tui tool ")
    assert set(action_names()) <= set(offered) and "listing.txt" not in offered, offered
    assert {OLD, NEW} <= set(shell_complete(shell, tmp_path, "horde-tui attach 2026"))


@pytest.mark.slow
@pytest.mark.parametrize("shell", SHELLS)
def test_a_real_shell_completes_from_the_parser(tmp_path: Path, shell: str) -> None:
    """Every line: a prefix narrows to one action, each command that takes a run offers run
    ids, `export` swarms and `all` too, and `gateway --<Tab>` the gateway's own flags."""
    RunDir(tmp_path / ".horde", OLD)
    RunDir(tmp_path / ".horde", NEW)
    assert shell_complete(shell, tmp_path, "horde-tui tool li") == ["list"]
    for command in ("export", "replay", "fork", "attach", "resume", "finalize"):
        assert {OLD, NEW} <= set(shell_complete(shell, tmp_path, f"horde-tui {command} 2026")), (
            command
        )
    assert "all" in shell_complete(shell, tmp_path, "horde-tui export a")
    flags = shell_complete(shell, tmp_path, "horde-tui gateway --")
    assert {"--port", "--model", "--tool-protocol", "--shared"} <= set(flags), flags
    assert shell_complete(shell, tmp_path, "horde-tui gateway --tool-protocol ") == sorted(
        ("auto", "json", "native")
    )
    assert shell_complete(shell, tmp_path, "horde-tui run --tool-protocol a") == ["auto"]
