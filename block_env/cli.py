"""The ``block-dominoes`` console command."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from block_env.options import ENCODINGS, EPISODES
from block_env.rules import PRESETS, Rules


def _rules_arg(value: str) -> Rules:
    try:
        return Rules.preset(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _int_arg(minimum: int, what: str, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer >= ``minimum`` (and <= ``maximum``), else an error saying
    ``what`` it is."""
    bound = f">= {minimum}" if maximum is None else f"{minimum}..{maximum}"

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} is an integer {bound}, got {value!r}") from None
        if number < minimum or (maximum is not None and number > maximum):
            raise argparse.ArgumentTypeError(f"{what} is an integer {bound}, got {number}")
        return number

    return parse


_positive_int = _int_arg(1, "this")
_seed_arg = _int_arg(0, "a seed")
_port_arg = _int_arg(1, "a port", 65535)


def cmd_encodings(args: argparse.Namespace) -> int:
    from block_env.observations import markdown_tables

    print(markdown_tables(args.rules))
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    for name, rules in PRESETS.items():
        print(f"{name:16s} {rules}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from block_env.agents import make_agent
    from block_env.arena import RECORDS_FILE, ArenaConfig, evaluate_into, markdown

    config = ArenaConfig(
        agents=tuple(args.agents),
        rules=args.rules,
        episode=args.episode,
        deals=args.deals,
        seed=args.seed,
        workers=args.workers,
        record=args.record,
    )
    for spec in config.agents:  # every agent built once: a bad folder or option fails now
        make_agent(spec, config.rules)
    out = _output_folder(args.out)
    records = out / RECORDS_FILE
    if records.exists() and not args.resume:
        raise ValueError(f"{records} exists: pass --resume to continue that run, or choose another --out")
    try:
        report, paths = evaluate_into(config, out, resume=args.resume, ray_address=args.ray, progress=not args.quiet)
    except KeyboardInterrupt:
        print(f"interrupted: the finished deals are in {records}; continue with the same command and --resume")
        return 130
    print(markdown(report))
    print("wrote " + ", ".join(str(p) for p in [*paths.values(), records]))
    return 0


def _output_folder(value: str) -> Path:
    """An output folder that exists or can be made (checked before any work starts)."""
    folder = Path(value)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {value} is an existing file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"--out {value} cannot be made: {e.strerror}") from None
    return folder


def cmd_play(args: argparse.Namespace) -> int:
    from block_env.apps.terminal import play_in_terminal

    try:
        return play_in_terminal(args.rules, args.opponents, seat=args.seat, episode=args.episode, seed=args.seed)
    except KeyboardInterrupt:
        print("\ninterrupted: the game is abandoned")
        return 130


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from block_env.apps.web import serve
    except ImportError as e:
        raise ValueError(f"the web app needs the [web] extra (pip install 'block-env[web]'): {e}") from None
    serve(
        args.host,
        args.port,
        data=args.data,
        store=args.store,
        workers=args.workers,
        agents_dirs=args.agents_dir,
        move_seconds=args.move_seconds,
        max_active=args.max_active_games,
        new_games_per_minute=args.new_games_per_minute,
        keep_seconds=None if args.keep_days == 0 else args.keep_days * 86400,
        keep_finished=None if args.keep_games == 0 else args.keep_games,
    )
    return 0


def _resume_hint(run: Path) -> str:
    """How to continue an interrupted run: the run folder's config.yaml holds every override and
    ``--set`` it ran with."""
    config_file, folder = (shlex.quote(str(path)) for path in (run / "config.yaml", run))
    return f"interrupted: resume with block-dominoes train --config {config_file} --out {folder} --resume latest"


def _train_overrides(args: argparse.Namespace) -> dict:
    overrides = {}
    if getattr(args, "total_timesteps", None) is not None:
        overrides["total_timesteps"] = args.total_timesteps
    if getattr(args, "seed", None) is not None:
        overrides["seed"] = args.seed
    return overrides


def _teacher_games_on(config: Any, ray_address: str | None, resuming: bool = False) -> Any:
    """``config`` with ``--ray``'s address for its teacher games (the file's when not given);
    an error when the run plays none, rather than an option silently ignored."""
    if ray_address is None:
        return config
    if resuming:
        raise ValueError("--ray runs the teacher games on Ray; a resumed run plays none (it continues PPO)")
    if config.pretrain.prior is None and (config.pretrain.teacher is None or config.pretrain.decisions == 0):
        raise ValueError("--ray runs the teacher games on Ray; this config plays none (no pretrain.teacher decisions)")
    pretrain = dataclasses.replace(config.pretrain, ray_address=ray_address)
    pretrain.validate()
    return dataclasses.replace(config, pretrain=pretrain)


def cmd_train(args: argparse.Namespace) -> int:
    from block_env.training.config import load_config
    from block_env.training.train import latest_checkpoint, train

    config = load_config(args.config, _train_overrides(args), args.settings)
    config = _teacher_games_on(config, args.ray, resuming=args.resume is not None)
    out = _output_folder(args.out)
    resume = latest_checkpoint(out) if args.resume == "latest" else args.resume
    try:
        summary = train(config, out, resume=resume, progress=not args.quiet)
    except KeyboardInterrupt:  # in the warm start or expert iteration (PPO saves a checkpoint and returns)
        return 130
    print(json.dumps(summary, indent=2))
    return 130 if summary.get("interrupted") else 0


def cmd_train_rllib(args: argparse.Namespace) -> int:
    try:
        from block_env.training.rllib import RLlibConfig, train_rllib
    except ImportError as e:
        raise ValueError(f"train-rllib needs the [ray] extra (pip install 'block-env[ray]'): {e}") from None
    config = RLlibConfig.load(args.config)
    if args.iterations is not None:
        config = dataclasses.replace(config, iterations=args.iterations)
    summary = train_rllib(
        config,
        _output_folder(args.out),
        address=args.address,
        resume=args.resume,
        progress=not args.quiet,
        evaluate_against=tuple(args.evaluate) if args.evaluate else None,
    )
    print(summary.pop("arena", ""))
    print(json.dumps(summary, indent=2))
    return 0


def cmd_exploit(args: argparse.Namespace) -> int:
    from block_env.training.exploit import exploit

    result = exploit(
        args.agent,
        args.rules,
        args.steps,
        _output_folder(args.out),
        seed=args.seed,
        deals=args.deals,
        workers=args.workers,
        init_from=args.init_from,
        env_processes=args.env_processes,
        observation=args.observation,
        exact=args.exact,
        progress=not args.quiet,
    )
    if result.get("interrupted"):
        print(_resume_hint(Path(args.out)))
        return 130
    print(
        f"best response - {result['target']}: {result['margin']:+.2f} ({result['low']:+.2f} .. {result['high']:+.2f}) "
        f"points per round on {result['deals']} fresh deals, after {result['steps']} steps"
    )
    if "exact" in result:
        exact = result["exact"]
        print(
            f"exact gains: best response {exact['best_response']:.4f}, this one {exact['learned']:.4f} "
            f"({exact['share']:.1%}) points per round"
        )
    return 0


def _trained_agent_folder(spec: str, option: str) -> Path:
    """The agent folder a command's ``option`` names (pretrained:NAME, policy:PATH); ValueError
    naming the option for any other spec."""
    from block_env.agents import trained_agent_folder

    try:
        return trained_agent_folder(spec)
    except ValueError as e:
        raise ValueError(f"{option}: {e}") from None


def cmd_average(args: argparse.Namespace) -> int:
    from block_env.agents.policy import average_agent_folders

    folders = [_trained_agent_folder(spec, "--agents") for spec in args.agents]
    out = average_agent_folders(folders, args.out)
    print(f"wrote {out}: the weight average of {', '.join(args.agents)} (play it as policy:{out})")
    return 0


def cmd_endgame(args: argparse.Namespace) -> int:
    from block_env.agents.policy import add_endgame_search

    out = add_endgame_search(_trained_agent_folder(args.agent, "--agent"), args.out, args.search, args.hand_at_most)
    print(
        f"wrote {out}: {args.agent} with its decisions at {args.hand_at_most} tiles or fewer searched by "
        f"{args.search} (play it as policy:{out})"
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from block_env.training.config import load_config
    from block_env.training.train import export_checkpoint

    config = None if args.config is None else load_config(args.config)
    out = export_checkpoint(args.checkpoint, args.out, config)
    print(f"wrote {out}: the policy of {args.checkpoint} (play it as policy:{out})")
    return 0


def cmd_mirror(args: argparse.Namespace) -> int:
    from block_env.agents.policy import play_both_ways

    out = play_both_ways(_trained_agent_folder(args.agent, "--agent"), args.out)
    print(
        f"wrote {out}: {args.agent} reading each position after the opening both ways round, its logits and "
        f"its mirror image's averaged (play it as policy:{out})"
    )
    return 0


def cmd_score_moves(args: argparse.Namespace) -> int:
    from block_env.training.move_scorer import fit_move_scorer

    _trained_agent_folder(args.agent, "--agent")
    report = fit_move_scorer(
        args.agent,
        args.decisions,
        args.out,
        hidden=args.hidden,
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
        temperature=args.temperature,
        holdout=args.holdout,
        seed=args.seed,
        continuing=args.continuing,
    )
    print(
        f"wrote {args.out}: {args.agent} with "
        f"{'its move scorer fitted further' if args.continuing else 'a move scorer fitted'} "
        f"on {report['fitted_decisions']:,} decisions "
        f"({report['fitted_rows']:,} rows with their mirror images; pass {report['kept_epoch']} kept; "
        f"report in {args.out}/move_scorer.json; play it as policy:{args.out})"
    )
    return 0


def cmd_solve(args: argparse.Namespace) -> int:
    from block_env.rules import Rules
    from block_env.training.solve import solve

    changes = {k: v for k, v in (("max_pip", args.max_pip), ("hand_size", args.hand_size)) if v is not None}
    rules = Rules.preset(args.rules).replace(**changes)
    solve(
        rules,
        args.iterations,
        _output_folder(args.out),
        agents=args.agents,
        progress=not args.quiet,
        algorithm=args.algorithm,
        until=args.until,
    )
    print((Path(args.out) / "summary.md").read_text())
    print(f"wrote {args.out}: policy.npz, nash_conv.csv, nash_conv.png, agents.csv, summary.md, solve.json")
    return 0


def cmd_main(args: argparse.Namespace) -> int:
    """Train with the config, then run the arena against the baselines and print the table."""
    from block_env.arena import markdown
    from block_env.training.config import load_config
    from block_env.training.main_job import final_arena_command, phase_times, run_main_job
    from block_env.training.train import RunPaths

    config = _teacher_games_on(load_config(args.config, _train_overrides(args), args.settings), args.ray)
    out = _output_folder(args.out)
    arena = final_arena_command(config, out, args.workers)
    then = f"; then the final arena: {arena}" if arena is not None else ""
    try:
        result = run_main_job(config, out, workers=args.workers, progress=not args.quiet)
    except KeyboardInterrupt:  # in the prior, the warm start or the arena (PPO itself stops at a checkpoint)
        paths = RunPaths(out)
        if (out / "arena").is_dir():
            again = f"{arena} --resume" if arena is not None else "block_env.training.main_job.final_arena's arena"
            print(f"interrupted in the final arena: continue it with {again}")
        elif paths.resumable():
            print(_resume_hint(out) + then)
        elif paths.teacher_decisions.exists():
            print(
                f"interrupted in the warm start's fit: its teacher decisions are kept; fit them again into a new --out "
                f"with --set pretrain.decisions=0 --set 'pretrain.earlier_decisions=[{paths.teacher_decisions}]'"
            )
        else:
            print(f"interrupted before the teacher's decisions were all gathered: nothing in {out} can be continued")
        return 130
    summary = result.training
    if result.report is None:
        print(_resume_hint(out) + then)
        return 130
    print(f"trained {summary['timesteps']} steps in {summary['seconds']} s ({summary['steps_per_second']} env steps/s)")
    print(f"time per phase: {phase_times(summary['phases'])}")
    print(markdown(result.report))
    print("wrote " + ", ".join(str(p) for p in result.files.values()) + f", {summary['learning_curve']}")
    return 0


class OneLineErrors(argparse.ArgumentParser):
    """Argument errors as one line on stderr (exit 2); ``-h`` still shows the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


def _add_ray_option(p: argparse.ArgumentParser, text: str) -> None:
    """``--ray [ADDRESS]``: "local" when given without an address, None when absent."""
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS", help=text)


def build_parser() -> argparse.ArgumentParser:
    """The ``block-dominoes`` parser: one subcommand per job, each added by its own function."""
    parser = OneLineErrors(prog="block-dominoes", description="Block dominoes for reinforcement learning.")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (
        _add_encodings,
        _add_rules,
        _add_eval,
        _add_play,
        _add_train_rllib,
        _add_serve,
        _add_train,
        _add_solve,
        _add_exploit,
        _add_average,
        _add_endgame,
        _add_mirror,
        _add_score_moves,
        _add_export,
    ):
        add(sub)
    return parser


def _add_encodings(sub: Any) -> None:
    p = sub.add_parser("encodings", help="print every observation encoding's piece table (Markdown)")
    p.add_argument("--rules", type=_rules_arg, default=Rules(), help="rules preset (default: standard)")
    p.set_defaults(func=cmd_encodings)


def _add_rules(sub: Any) -> None:
    p = sub.add_parser("rules", help="list the rules presets")
    p.set_defaults(func=cmd_rules)


def _add_eval(sub: Any) -> None:
    from block_env.arena import default_workers

    p = sub.add_parser("eval", help="duplicate-deal arena: win rates with 95%% CIs, head-to-head, ratings")
    p.add_argument(
        "--agents", nargs="+", required=True, help="agent specs: random greedy strategic search policy:PATH ..."
    )
    p.add_argument("--rules", type=_rules_arg, default=Rules(), help="rules preset (default: standard)")
    p.add_argument("--episode", choices=EPISODES, default="round")
    p.add_argument("--deals", type=_positive_int, default=200, help="duplicate deals (default 200)")
    p.add_argument("--seed", type=_seed_arg, default=0)
    p.add_argument("--workers", type=_positive_int, default=default_workers(), help="processes (default: all cores)")
    p.add_argument("--out", default="results/arena", help="folder for summary.md/.csv, report.json, chart.png")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_ray_option(
        p,
        "play the deals as Ray tasks: on a local Ray started for the run (no ADDRESS; --workers CPUs), "
        "'auto' (the cluster this machine is in) or a cluster's address (extra [ray])",
    )
    p.add_argument(
        "--record", action="store_true", help="keep every deal's full move record in records.jsonl (replay: serve)"
    )
    p.add_argument(
        "--resume", action="store_true", help="continue an interrupted run from --out's records.jsonl (same arguments)"
    )
    p.set_defaults(func=cmd_eval)


def _add_play(sub: Any) -> None:
    p = sub.add_parser("play", help="play against agents in the terminal")
    p.add_argument("--rules", type=_rules_arg, default=Rules(), help="rules preset (default: standard)")
    p.add_argument(
        "--opponents",
        nargs="+",
        default=["strategic"],
        help="agent specs for the other seats, in turn (at most one a seat)",
    )
    p.add_argument("--seat", type=int, default=0, help="your seat (0 leads by lot like any other)")
    p.add_argument("--episode", choices=EPISODES, default="match")
    p.add_argument("--seed", type=_seed_arg, default=None)
    p.set_defaults(func=cmd_play)


def _add_train_rllib(sub: Any) -> None:
    p = sub.add_parser("train-rllib", help="self-play PPO on Ray RLlib (a local Ray or a cluster; extra [ray])")
    p.add_argument("--config", default="configs/rllib.yaml", help="YAML RLlib config")
    p.add_argument("--out", default="runs/rllib", help="run folder (checkpoint, TensorBoard logs, exported agent)")
    p.add_argument("--address", default=None, help="a Ray cluster's address, or 'auto' (default: a local Ray)")
    p.add_argument("--iterations", type=_positive_int, default=None, help="override the config's iterations")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    p.add_argument(
        "--evaluate", nargs="*", default=["random", "greedy"], help="agent specs the exported agent meets in the arena"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train_rllib)


def _add_solve(sub: Any) -> None:
    p = sub.add_parser("solve", help="CFR+ and exact NashConv on the small two-player sets (docs/solver.md)")
    p.add_argument(
        "--rules", choices=("tiny", "small", "medium"), default="tiny", help="a set small enough for exact methods"
    )
    p.add_argument("--max-pip", type=_positive_int, help="override the preset's set (e.g. 4: double-four)")
    p.add_argument("--hand-size", type=_positive_int, help="override the preset's tiles per hand")
    p.add_argument("--iterations", type=_positive_int, default=100, help="iterations (default 100)")
    p.add_argument("--algorithm", choices=("cfr+", "dcfr"), default="cfr+", help="CFR+ (default) or discounted CFR")
    p.add_argument("--until", type=float, help="stop once NashConv is at most this share of the mean award (e.g. 0.01)")
    p.add_argument("--agents", nargs="*", default=[], help="agent specs whose exact NashConv to measure")
    p.add_argument("--out", default="runs/solve", help="folder for the policy, the NashConv curve and the table")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_solve)


def _add_exploit(sub: Any) -> None:
    from block_env.arena import default_workers

    p = sub.add_parser("exploit", help="train a best response to an agent and measure what it wins")
    p.add_argument("--agent", required=True, help="the target's agent spec (frozen at every other seat)")
    p.add_argument("--rules", default="standard", choices=list(PRESETS), help="rules preset (default: standard)")
    p.add_argument("--steps", type=_positive_int, default=10_000_000, help="the best response's env steps")
    p.add_argument("--deals", type=_positive_int, default=2000, help="fresh duplicate deals of the final arena")
    p.add_argument("--seed", type=_seed_arg, default=0)
    p.add_argument("--workers", type=_positive_int, default=default_workers(), help="arena processes")
    p.add_argument("--out", default="runs/exploit", help="run folder")
    p.add_argument(
        "--init-from",
        help="start the best response from this trained agent's policy (pretrained:NAME or policy:PATH) "
        "instead of a fresh network: a tighter bound at a small budget",
    )
    p.add_argument(
        "--env-processes",
        type=_positive_int,
        default=1,
        help="processes the training games step in, one core each, a divisor of its 256 games "
        "(more than 1 pays for a costly target: search)",
    )
    p.add_argument(
        "--observation",
        choices=ENCODINGS,
        help='the encoding the best response reads (default: "tracked", or the target\'s own where richer: "history")',
    )
    p.add_argument(
        "--exact",
        action="store_true",
        help="also the exact gains of the best response and of an exact one (two-seat sets the solver lays out: "
        "tiny, small, medium)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_exploit)


def _add_average(sub: Any) -> None:
    p = sub.add_parser("average", help="average trained agents' policy networks, weight by weight, into a new agent")
    p.add_argument(
        "--agents",
        nargs="+",
        required=True,
        help="two or more trained agents (pretrained:NAME, policy:PATH) of one shape",
    )
    p.add_argument("--out", required=True, help="the new agent folder (must not exist yet, or be empty)")
    p.set_defaults(func=cmd_average)


def _add_endgame(sub: Any) -> None:
    p = sub.add_parser(
        "endgame", help="a trained agent that hands its last decisions of a round to a search, as a new agent"
    )
    p.add_argument("--agent", required=True, help="the trained agent (pretrained:NAME, policy:PATH)")
    p.add_argument(
        "--search",
        default="search:worlds=32,playout=greedy,epsilon=0,prior=none",
        help="the search spec that plays those decisions (default: %(default)s)",
    )
    p.add_argument(
        "--hand-at-most",
        type=_int_arg(2, "the tiles held at most"),
        default=3,
        help="the search decides once the agent holds this many tiles or fewer, 2 or more (default: %(default)s)",
    )
    p.add_argument("--out", required=True, help="the new agent folder (must not exist yet, or be empty)")
    p.set_defaults(func=cmd_endgame)


def _add_mirror(sub: Any) -> None:
    p = sub.add_parser(
        "mirror",
        help="a trained agent that reads each position both ways round (the line's ends swapped), as a new agent",
    )
    p.add_argument("--agent", required=True, help="the trained agent (pretrained:NAME, policy:PATH)")
    p.add_argument("--out", required=True, help="the new agent folder (must not exist yet, or be empty)")
    p.set_defaults(func=cmd_mirror)


def _add_score_moves(sub: Any) -> None:
    p = sub.add_parser(
        "score-moves",
        help="fit a move scorer on a trained agent's frozen network to a search teacher's decisions, as a new agent",
    )
    p.add_argument("--agent", required=True, help="the trained agent (pretrained:NAME, policy:PATH)")
    p.add_argument(
        "--decisions",
        nargs="+",
        required=True,
        help="teacher decisions saved by training runs (RUN/teacher_decisions.npz), with move values",
    )
    p.add_argument("--out", required=True, help="the new agent folder (must not exist yet, or be empty)")
    p.add_argument(
        "--continue",
        dest="continuing",
        action="store_true",
        help="fit the agent's own move scorer further, from its weights, in place of a new one",
    )
    p.add_argument(
        "--hidden", type=int, default=None, help="the scorer's hidden units (default: 64; with --continue, its own)"
    )
    p.add_argument("--epochs", type=int, default=5, help="passes over the decisions (default: %(default)s)")
    p.add_argument(
        "--learning-rate",
        type=float,
        default=3e-4,
        help="Adam's step on the first pass; pass k (from 1) of n runs at it times 1 - (k-1)/n (default: %(default)s)",
    )
    p.add_argument("--batch-size", type=int, default=512, help="decisions per step (default: %(default)s)")
    p.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="points of the targets' softmax over move values (default: %(default)s)",
    )
    p.add_argument(
        "--holdout",
        type=float,
        default=0.1,
        help="share of each file held out to choose the pass kept (default: %(default)s)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the scorer's first weights (not with --continue) and batch order (default: %(default)s)",
    )
    p.set_defaults(func=cmd_score_moves)


def _add_export(sub: Any) -> None:
    p = sub.add_parser("export", help="a training run's PPO checkpoint as an agent folder, to play in the arena")
    p.add_argument(
        "--checkpoint", required=True, help="the checkpoint (RUN/checkpoints/ppo_STEPS_steps.zip, or RUN/final.zip)"
    )
    p.add_argument(
        "--config", help="the run's config (default: RUN/config.yaml, beside the checkpoint or its checkpoints folder)"
    )
    p.add_argument("--out", required=True, help="the new agent folder (must not exist yet, or be empty)")
    p.set_defaults(func=cmd_export)


def _add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="play and replay in the browser (a local web app; extra [web])")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_port_arg, default=8000, help="port (default 8000)")
    p.add_argument(
        "--agents-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="offer the agent folders in DIR as opponents (policy:DIR/NAME; repeatable); no other path is served",
    )
    p.add_argument(
        "--move-seconds",
        type=_move_seconds,
        default=10.0,
        help="an opponent's move is stopped after this long (default 10); the player retries or seats a fallback",
    )
    p.add_argument(
        "--data", default="runs/web", help="folder of the SQLite store (default runs/web), unless --store names one"
    )
    p.add_argument(
        "--store", metavar="URL", help="the games' database instead: postgresql+psycopg://USER:PASSWORD@HOST/DB"
    )
    p.add_argument("--workers", type=_positive_int, default=1, help="worker processes sharing the store (default 1)")
    p.add_argument(
        "--max-active-games", type=_positive_int, default=1000, help="games in active play at once (default 1000; 503)"
    )
    p.add_argument(
        "--new-games-per-minute",
        type=_int_arg(0, "new games a minute"),
        default=30,
        help="new games a minute from one address (default 30; 429 with Retry-After beyond; 0: no limit)",
    )
    p.add_argument(
        "--keep-days",
        type=_int_arg(0, "days"),
        default=30,
        help="finished games older than this are pruned (default 30; 0: kept whatever their age)",
    )
    p.add_argument(
        "--keep-games",
        type=_int_arg(0, "finished games"),
        default=100_000,
        help="only the newest this many finished games are kept (default 100000; 0: no such bound)",
    )
    p.set_defaults(func=cmd_serve)


def _move_seconds(value: str) -> float:
    from block_env.apps.budget import MAX_MOVE_SECONDS

    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= MAX_MOVE_SECONDS:  # nan and inf too
        raise argparse.ArgumentTypeError(
            f"a move's time is a positive number of seconds up to {MAX_MOVE_SECONDS:g}, got {value}"
        )
    return seconds


def _add_train(sub: Any) -> None:
    """``train`` and ``main``: the same config options; train resumes, main sizes its arena."""
    from block_env.arena import default_workers

    for name, func, text in [
        ("train", cmd_train, "train a MaskablePPO agent from a YAML config"),
        ("main", cmd_main, "the main job: train with a config, then evaluate against the baselines"),
    ]:
        p = sub.add_parser(name, help=text)
        p.add_argument("--config", default="configs/default.yaml", help="YAML training config")
        p.add_argument("--out", default="runs/default", help="run folder (agents, checkpoints, logs, curves)")
        p.add_argument("--total-timesteps", type=_positive_int, default=None, help="override total_timesteps")
        p.add_argument("--seed", type=_seed_arg, default=None, help="override the config's seed")
        p.add_argument(
            "--set",
            dest="settings",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="set one config key, dotted into its section, VALUE read as YAML (e.g. pretrain.decisions=30000); "
            "repeat for more",
        )
        p.add_argument("--quiet", action="store_true", help="no progress bars")
        _add_ray_option(
            p,
            "play the teacher games as Ray tasks (the same decisions): on a local Ray started for them "
            "(no ADDRESS; pretrain.workers CPUs), 'auto' or a cluster's address (extra [ray])",
        )
        if name == "train":
            p.add_argument(
                "--resume", default=None, help="checkpoint .zip to continue from, or 'latest' (the newest in --out)"
            )
        else:
            p.add_argument("--workers", type=_positive_int, default=default_workers(), help="arena processes")
        p.set_defaults(func=func)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError) as e:  # a user error: one line, no traceback
        message = " ".join(str(e).split())
        parser.exit(2, f"block-dominoes {args.command}: error: {message}\n")
    except EOFError:
        parser.exit(2, f"block-dominoes {args.command}: error: the input ended\n")


if __name__ == "__main__":
    sys.exit(main())
