"""The one stylesheet of every page, inlined so an exported page opens alone from disk.

Every text colour keeps 4.5:1 against the background in both themes (a test computes
it from this palette), and links are underlined, not told apart by colour alone."""

CSS = """
:root { color-scheme: light dark; --fg: #1d1f21; --bg: #fafafa; --dim: #5f646a;
  --line: #d6d8db; --accent: #2a6aa8; --good: #276b2b; --warn: #8f5400; --bad: #c62828; }
@media (prefers-color-scheme: dark) { :root { --fg: #e0e2e4; --bg: #16181a; --dim: #9aa0a6;
  --line: #33373b; --accent: #7ab4f0; --good: #81c784; --warn: #ffb74d; --bad: #ef9a9a; } }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg);
  margin: 0 auto; max-width: 1200px; padding: 0 1rem 2rem; }
a { color: var(--accent); text-decoration: underline; text-underline-offset: 2px; }
a:hover { text-decoration-thickness: 2px; }
header { border-bottom: 1px solid var(--line); padding: .6rem 0; margin-bottom: .8rem; }
header .scope { font-weight: 600; } header nav a { margin-right: .8rem; }
header nav a.current { font-weight: 700; color: var(--fg); }
footer { border-top: 1px solid var(--line); margin-top: 2rem; padding-top: .5rem;
  color: var(--dim); font-size: 12px; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .45rem; text-align: left;
  vertical-align: top; }
th { font-weight: 600; color: var(--dim); }
pre { white-space: pre-wrap; word-break: break-word; background: rgba(127,127,127,.08);
  padding: .5rem; border-radius: 4px; font: 12.5px/1.4 ui-monospace, monospace; }
details { margin: .2rem 0; } summary { cursor: pointer; }
.entry { border-left: 3px solid var(--line); padding-left: .7rem; margin: 1rem 0; }
.dim { color: var(--dim); } .good { color: var(--good); } .warn { color: var(--warn); }
.error, .bad { color: var(--bad); }
.msg { border-bottom: 1px dotted var(--line); padding: .3rem 0; }
.msg .role { font-weight: 600; }
.graph { overflow-x: auto; border: 1px solid var(--line); }
.graph text { font: 11px ui-monospace, monospace; fill: var(--fg); }
.graph .lane-label { font-weight: 600; }
.graph .phase { fill: rgba(42,109,176,.08); } .graph .phase-label { fill: var(--dim); }
.graph .k-finding { fill: var(--good); } .graph .k-refuted, .graph .k-refusal { fill: var(--bad); }
.graph .k-review { fill: var(--accent); } .graph .k-lifecycle { fill: var(--dim); }
.graph .edge { fill: none; stroke: var(--accent); stroke-opacity: .55; stroke-width: 1.2; }
.graph .e-dotted { stroke: var(--dim); stroke-dasharray: 3 3; }
.graph .e-thick { stroke-width: 2.4; }
.graph marker path { fill: var(--accent); }
.pager a { margin-right: .6rem; }
"""
