"""Oracle controllers: scripted skills (IK arm, navmap path following) acting through the action vector.

`make_oracle(skill, cfg)` builds one from `skills.oracles.factory.ORACLES`; every oracle has
`reset(sim, episode)` (or `start(sim, target)`) and `act(sim) -> full 11-dim action`, and
`select_subset` cuts a full action down to a skill env's action subsets.
"""
