"""Generated protobuf code for the gRPC transport; see ``vfl.proto`` for how to regenerate it."""
