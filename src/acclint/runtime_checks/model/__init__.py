"""The fingerprint and the vocabulary both sides share: records, file format, hash, names, kinds, stages.

The bottom room: it imports no other room, and no framework.
"""
