"""The descriptor pool of the client's messages: a private one, not protobuf's default.

The messages here have TensorFlow's and TF Serving's full names
(`tensorflow.TensorProto`, `tensorflow.serving.PredictRequest`, ...), so they
could not share protobuf's default pool with the `tensorflow` package's own
copies. In their own pool both can be imported in one process (the local
server, the tests); the bytes on the wire are the same.
"""

from google.protobuf import any_pb2, descriptor_pool, wrappers_pb2

POOL = descriptor_pool.DescriptorPool()
for _file in (wrappers_pb2, any_pb2):
    POOL.AddSerializedFile(_file.DESCRIPTOR.serialized_pb)
