"""What brokers and clients share on the data plane: the record batch format and key hashing."""
