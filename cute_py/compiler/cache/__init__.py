"""The compile cache: dependency manifests, configuration keys, and the store on disk."""
