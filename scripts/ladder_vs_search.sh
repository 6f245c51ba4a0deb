#!/usr/bin/env bash
# The per-preset ladders against search (results/README.md, "Every table against search"): the
# scripted agents, the preset's teacher (the search that infers the hidden hands from the other
# players' moves), the earlier network and the shipped one, all in one arena with search per
# preset (benchmarks/ladder.py), with each agent's time per decision. Run it on a quiet machine:
# the times are measured as it goes. About an hour on two cores, most of it the teachers.
set -euo pipefail
cd "$(dirname "$0")/.."
ladder() {
  local preset=$1 deals=$2 seed=$3
  shift 3
  .venv/bin/python benchmarks/ladder.py --rules "$preset" --deals "$deals" --seed "$seed" --quiet \
    --out "results/ladder/$preset/versus-search" --agents random greedy strategic "$@"
}
ladder standard 500 20261397 "search:prior=pretrained:standard_seventh,playout=policy,belief=prior,confidence=0" \
  pretrained:standard_thirteenth pretrained:standard
ladder standard_3p 300 20261209 "search:prior=pretrained:standard_3p_vector,playout=policy,belief=prior" \
  pretrained:standard_3p_vector pretrained:standard_3p
ladder standard_4p 200 20261210 "search:prior=pretrained:standard_4p_vector,belief=prior,confidence=0" \
  pretrained:standard_4p_vector pretrained:standard_4p
ladder partnership 200 20261211 "search:prior=pretrained:partnership_third,playout=policy,belief=prior,confidence=0,worlds=48" \
  pretrained:partnership_tracked pretrained:partnership_third pretrained:partnership_average pretrained:partnership
