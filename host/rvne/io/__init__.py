"""Files and formats: RVNE blobs (blob, docs/format.md), named weights
(weights, names, state_dict, torchfile), frames, the upstream example
(upstream_init), inspect, other tool chains' formats (formats/,
docs/formats.md), and how every input is read and every output written
(files, atomic; docs/files.md). Imports model (the contract) and below."""
