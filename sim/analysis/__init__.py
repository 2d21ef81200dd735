"""What the runs say: reports, paired comparisons, sweeps, figures, HTML pages, tuning and replays.

Modules: `tables` (tables and number formats shared by every output),
`report`, `compare`, `sweep`, `plots`, `html`, `tune`, `replay`, `datasets`
(runs as one polars LazyFrame, `sim.load`; the runs in a folder, `sim ls`).
"""
