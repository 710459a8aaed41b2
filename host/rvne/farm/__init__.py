"""Board farms through labgrid (docs/farm.md): a labgrid place as a device,
and many places checked or updated at once. labgrid is an optional extra
(`pip install 'rvne[farm]'`); it is imported only when a place is asked for."""
