"""The swarm runtime: agent workers, the fleets that run them (local processes, Ray actors), the orchestrator
that drains a plan, the workloads and the real coding agents' work (git worktrees, headless Claude Code and Codex).

Runs on `groove.client` and `groove.protocol` alone: never the coordinator or the embedding model.
"""
