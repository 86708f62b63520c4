"""Measurement services shared by bench, train, infer and profile (siblings that never import one
another's internals): timing (`timing`), what else the machine does meanwhile (`noise`), GPU power
and energy (`power`), hardware peaks read from the facts table (`peaks`), memory monitoring
(`memory`) and progress ticks (`ticks`). Nothing here imports a capability package.
"""
