"""Dump readers: the files `--xla_dump_to` writes (`directory`), reading them (`files`), the side
files beside the HLO (`buffers`: buffer assignment and live ranges), the parsed-model cache
(`model_cache`), and jax's own records of a run (`jaxlog`, `compilation_cache`)."""
