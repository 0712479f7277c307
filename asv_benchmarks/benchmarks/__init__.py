"""asv benchmarks of fastfm (configuration: ../asv.conf.json)."""
