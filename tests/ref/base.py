"""Constants and the error type shared by the reference's modules."""

PAD, UNK, BOS, EOS = 0, 1, 2, 3


class RefError(Exception):
    """Bad input (configuration, weights, batch): the command line prints
    "ref_torch: <message>" and exits 2."""
