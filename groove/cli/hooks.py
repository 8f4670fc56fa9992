"""`groove hooks install|uninstall`: write groove's session hooks, MCP server entry and instructions into a
coding agent's own configuration, and take them out again (integrations/install.py says what goes where)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from groove.cli.hook import HOOK_TIMEOUT_S, state_dir_option
from groove.cli.options import DEFAULT_ENDPOINT, cluster_of, connection_options, connection_settings
from groove.cli.output import fail
from groove.integrations.codextrust import TrustError, install_trust, remove_trust
from groove.integrations.hook import default_state_dir, project_root
from groove.integrations.install import AGENTS, InstallError, Manifest, Setup, plan_install, plan_uninstall


@click.group(name="hooks")
def hooks_group() -> None:
    """Wire groove into a coding agent's configuration (Claude Code, Codex): its session hooks, the MCP server
    and an instructions block, merged with what is there; `uninstall` takes out exactly what was added."""


def _where(project: Path | None, user: bool) -> Path | None:
    if user and project is not None:
        raise click.UsageError("give --project DIR or --user, not both")
    if user:
        return None
    return Path(project_root(str((project or Path.cwd()).resolve())))


_place_options = [
    click.option("--project", "project", type=click.Path(exists=True, file_okay=False, path_type=Path),
                 help="The repository to configure (default: the git root of the current directory)."),
    click.option("--user", "user", is_flag=True, help="Configure the agent for every project of this user instead."),
    click.option("--agent", type=click.Choice(AGENTS), default="claude", show_default=True,
                 help="Which coding agent's files to write."),
    click.option("--dry-run", is_flag=True, help="Print the diff of every file, write nothing."),
    state_dir_option,
]  # fmt: skip


def _place(func: Any) -> Any:
    for option in reversed(_place_options):
        func = option(func)
    return func


@hooks_group.command(name="install")
@_place
@click.option("--prompts", is_flag=True, help="Also add a prompt's best new matches to it (UserPromptSubmit).")
@click.option("--nudges", is_flag=True,
              help="Also hand a session started with GROOVE_AGENT_ID=NAME that agent's nudges after each tool call "
                   "(PostToolUse).")  # fmt: skip
@click.option("--command", "program",
              help="How the agent runs groove, e.g. /opt/venv/bin/groove or 'uvx groove' [default: groove if it is on "
                   "PATH, else this Python with -m groove.cli].")  # fmt: skip
@connection_options
@click.pass_context
def install_command(ctx: click.Context, project: Path | None, user: bool, agent: str, dry_run: bool,
                    state_dir: Path | None, prompts: bool, nudges: bool, program: str | None) -> None:  # fmt: skip
    """Install groove's hooks, MCP server entry and instructions for an agent. The connection options given
    (or set in the environment) are written into every command, with --timeout 3 unless another is given: an
    agent waits for its hooks before the session starts."""
    settings = connection_settings(ctx.obj)
    options = [] if settings["endpoint"] == DEFAULT_ENDPOINT else ["--endpoint", settings["endpoint"]]
    options += ["--timeout", f"{settings['timeout'] if _given(ctx, 'timeout') else HOOK_TIMEOUT_S:g}"]
    for flag, name in (("--server-key", "server_key"), ("--key", "client_key")):
        if settings.get(name):
            value = str(settings[name])
            options += [flag, str(Path(value).resolve()) if Path(value).exists() else value]
    if cluster_of(settings) is not None:  # read now: a map the hooks could not use is refused at install
        options += ["--cluster", str(Path(settings["cluster"]).resolve())]
    chosen = program is None
    if program is None:  # what the agent will find; a groove only in an unactivated venv is not on its PATH
        program = "groove" if shutil.which("groove") else shlex.join([sys.executable, "-m", "groove.cli"])
    try:
        command = shlex.split(program)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--command") from None
    if not command:
        raise click.BadParameter("give the command that runs groove", param_hint="--command")
    setup = _change(project, user, agent, dry_run, state_dir, removing=False, program=command, options=options,
                    prompts=prompts, nudges=nudges)  # fmt: skip
    if agent == "codex" and not dry_run:
        _trust_codex(setup)
    if chosen and program != "groove":  # said once the install is done: an error stays the only line
        click.echo(f"groove is not on PATH: the agent runs it as `{program}` (--command chooses)", err=True)


@hooks_group.command(name="uninstall")
@_place
def uninstall_command(project: Path | None, user: bool, agent: str, dry_run: bool, state_dir: Path | None) -> None:
    """Take out what `groove hooks install` added: files unchanged since are restored byte for byte; in files
    edited since, only groove's entries and block are removed."""
    _change(project, user, agent, dry_run, state_dir, removing=True, program=["groove"], options=[], prompts=False,
            nudges=False)  # fmt: skip


def _given(ctx: click.Context, name: str) -> bool:
    """Whether the user set option `name` (before or after the verb, or in the environment)."""
    sources = [ctx.get_parameter_source(name), ctx.find_root().get_parameter_source(name)]
    return any(s is not None and s is not click.core.ParameterSource.DEFAULT for s in sources)


def _change(project: Path | None, user: bool, agent: str, dry_run: bool, state_dir: Path | None, *,
            removing: bool, program: list[str], options: list[str], prompts: bool, nudges: bool) -> Setup:  # fmt: skip
    root = _where(project, user)
    setup = Setup(agent, Path.home(), root, program, options, prompts, nudges)
    manifest = Manifest(state_dir or default_state_dir())
    try:
        if removing and agent == "codex" and not dry_run and remove_trust(_codex_config(), setup.files()["hooks"]):
            click.echo(f"updated {_codex_config()} (groove's hooks no longer trusted)")
        changes = (plan_uninstall if removing else plan_install)(setup, manifest)
        if not dry_run:
            manifest.apply(changes, removing)
    except InstallError as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), 1)
    where = "for this user" if root is None else f"in {root}"
    if not changes:
        state = "not installed" if removing else "already installed"
        click.echo(f"groove is {state} for {agent} {where}: nothing to change")
        return setup
    for change in changes:
        if dry_run:
            click.echo(change.diff(), nl=False)
            continue
        verb = "removed" if change.after is None else "created" if change.before is None else "updated"
        click.echo(f"{verb} {change.path}")
    if dry_run:
        click.echo(f"dry run: {len(changes)} file(s) would change, none was written")
    elif not removing:
        click.echo(f"next: keep `groove serve` running, then start {agent} {where}; each session is given the "
                   "project's learnings")  # fmt: skip
    return setup


def _codex_config() -> Path:
    """The Codex user config: where Codex keeps what a person trusts."""
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"


def _trust_codex(setup: Setup) -> None:
    """Have Codex trust the hooks just written (and their project), asking the installed Codex for their
    hashes; without a Codex on PATH, say how to trust them by hand."""
    hooks_file = setup.files()["hooks"]
    codex = shutil.which("codex")
    if codex is None:
        click.echo(
            f"codex is not on PATH: Codex skips the hooks in {hooks_file} until you trust them in its /hooks "
            "view (and the project with `codex --trust`), or run this again with codex on PATH",
            err=True,
        )
        return
    try:
        commands = {setup.hook_command(event) for event in setup.events()}
        trusted = install_trust(codex, _codex_config(), hooks_file, setup.project, commands)
    except TrustError as exc:
        fail(f"the hooks are written, but Codex will not run them: {exc}", 1)
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), 1)
    click.echo(f"updated {_codex_config()}: Codex trusts groove's {trusted} hooks"
               + ("" if setup.project is None else f" and {setup.project}"))  # fmt: skip
