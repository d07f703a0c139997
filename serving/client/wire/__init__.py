"""The wire: what a client, the local server and the exporter must agree on, in one place.

- `protos`: TF Serving's wire messages (a compiled subset, the same bytes on
  the wire) and our own `ModelListing` service (`model_listing.proto`).
- `tensors`: NumPy <-> `TensorProto` for the dtypes the translation contract
  uses.
- `errors`: `ServingError` and the status-code tables (gRPC names, REST
  statuses).
- `json_tensor`: TF Serving's REST JSON tensors, as the server reads and
  writes them and as the REST client writes and reads them.
- `contract`: the signatures every translator export has, and copies of
  TensorFlow's SavedModel constants (the client cannot import TensorFlow; a
  TensorFlow-side test checks the copies).

Plain Python plus protobuf and NumPy: the client distribution ships it, and
`keras_attention.serving.server` and `keras_attention.export` import it.
"""
