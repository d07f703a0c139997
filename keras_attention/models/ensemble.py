"""`Ensemble`: several translation models decoded as one, their log-probabilities averaged."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="keras_attention")
class Ensemble(keras.Model):
    """Several translation models with the same vocabularies, decoded as one model.

    A decoding strategy sees the ensemble as any other model: it has
    `Seq2Seq`'s decoding methods (`initial_decode_state`, `step_function`,
    `next_logits`, `output_projection`, `call_with_attention`), so greedy
    search, beam search, sampling, forced prefixes, lexical constraints and
    vocabulary shortlists run it in their one loop, and an export of it is
    one SavedModel. At each step, with `N` members:

    1. every member takes its own step from its own state:
       `l_i = logits_i(y_{t-1}, s_{i,t-1})`;
    2. the ensemble's logits are the mean of the members' log-probabilities,
       `mean_i log_softmax(l_i)` (float32);
    3. the strategy applies `log_softmax` to these as to any logits, so a
       token's log-probability is `mean_i log p_i(y) - log sum_y' exp(mean_i
       log p_i(y'))`: the members' normalized geometric mean (a product of
       experts), the distribution whose scores, `confidence` and sampling
       stay probabilities. Its argmax is the argmax of the mean of the
       log-probabilities. With one member, or identical members, it is the
       member's own distribution.

    The decoding state is the tuple of the members' states, so beam search
    reorders (and the dropping of finished rows drops) every member's state
    with the same rows. The attention a step returns is the mean of the
    attention weights of the members that have an attention layer (all
    members when none has one); it is what `attention` outputs hold and what
    unknown-word replacement follows. Teacher forcing (`call_with_attention`)
    combines the members the same way.

    Args:
        members: a list of at least one built `Seq2Seq` (or models with its
            decoding methods), with the same source and target vocabulary
            sizes and the same dtype policy (the ensemble's).
        name: the model's name. Defaults to `"ensemble"`.

    Example:

    >>> from keras_attention.models.seq2seq import Seq2Seq
    >>> sizes = dict(embedding_dim=8, encoder_units=8, attention="bahdanau")
    >>> first = Seq2Seq(20, 30, decoder_units=8, **sizes)
    >>> second = Seq2Seq(20, 30, decoder_units=16, cell="lstm", **sizes)
    >>> ensemble = Ensemble([first, second])
    >>> source = tf.constant([[4, 5, 6]])
    >>> state = ensemble.initial_decode_state(source)
    >>> logits, state, attention = ensemble.next_logits(0, tf.constant([1]), state)
    >>> logits.shape, len(state), attention.shape
    (TensorShape([1, 30]), 2, TensorShape([1, 3]))
    """

    def __init__(self, members, name="ensemble", **kwargs):
        members = list(members)
        if not members:
            raise ValueError("An `Ensemble` needs at least one member. Received: members=[]")
        sizes = {
            (
                getattr(member, "source_vocabulary_size", None),
                getattr(member, "target_vocabulary_size", None),
            )
            for member in members
        }
        if len(sizes) > 1:
            raise ValueError(
                "The members of an `Ensemble` must have the same vocabulary sizes. Received "
                f"(source, target) sizes {sorted(sizes, key=str)}"
            )
        policies = {member.dtype_policy.name for member in members}
        if len(policies) > 1:
            raise ValueError(
                "The members of an `Ensemble` must compute under the same dtype policy. "
                f"Received: {sorted(policies)}"
            )
        kwargs.pop("dtype", None)  # the members' policy, never another
        super().__init__(name=name, dtype=members[0].dtype_policy, **kwargs)
        self.members = members
        self.source_vocabulary_size, self.target_vocabulary_size = sizes.pop()

    def build(self, input_shape=None):
        for member in self.members:
            if not member.built:
                member.build()
        self.built = True

    def get_build_config(self):
        return {"members": len(self.members)}  # loading builds every member (`build`)

    def build_from_config(self, config):
        self.build()

    def call(self, inputs, training=False):
        logits, _ = self.call_with_attention(inputs, training=training)
        return logits

    def call_with_attention(self, inputs, training=False):
        """Teacher-forced mean log-probabilities and attention.

        Args:
            inputs: tuple `(source_ids, target_in)` of int tensors
                `(batch_size, Ts)` and `(batch_size, Tt)`.

        Returns:
            `(logits, attention)`: float32 `(batch_size, Tt, V)`, the mean of
            the members' log-probabilities (`log_softmax` of them gives the
            ensemble's), and float32 `(batch_size, Tt, Ts)`, the mean
            attention.
        """
        outputs = [member.call_with_attention(inputs, training=training) for member in self.members]
        return self._combine([logits for logits, _ in outputs], [a for _, a in outputs])

    def initial_decode_state(self, source_ids):
        """The tuple of the members' first decoding states for `source_ids` `(batch_size, Ts)`."""
        return tuple(member.initial_decode_state(source_ids) for member in self.members)

    def next_logits(self, step, token_ids, state, projection=None):
        """One decoding step (`Seq2Seq.next_logits`): the mean of the members'
        log-probabilities `(batch_size, V)`, the tuple of their new states, the
        mean attention `(batch_size, Ts)`."""
        return self.step_function(state, projection)(step, token_ids, state)

    def step_function(self, state, projection=None):
        """`next_logits` with each member's `step_function` built once, here.

        Args:
            state: the tuple from `initial_decode_state`.
            projection: `None`, or `output_projection(ids)` (one projection
                per member) for the logits of the target ids `ids` only.

        Returns:
            `next_fn(step, token_ids, state) -> (logits, state, attention)`.
        """
        projections = (None,) * len(self.members) if projection is None else projection
        steps = [
            member.step_function(member_state, member_projection)
            for member, member_state, member_projection in zip(
                self.members, state, projections, strict=True
            )
        ]

        def next_fn(step, token_ids, state):
            outputs = [
                member_step(step, token_ids, member_state)
                for member_step, member_state in zip(steps, state, strict=True)
            ]
            logits, attention = self._combine(
                [logits for logits, _, _ in outputs], [a for _, _, a in outputs]
            )
            return logits, tuple(new_state for _, new_state, _ in outputs), attention

        return next_fn

    def output_projection(self, ids):
        """Each member's output projection restricted to the target ids `ids` `(C,)`
        (`Seq2Seq.output_projection`), as a tuple for `step_function`."""
        return tuple(member.output_projection(ids) for member in self.members)

    def _combine(self, logits, attention):
        """The mean of `log_softmax(logits)` over the members and the mean of the
        attention of the members that attend (all of them if none does)."""
        log_probs = [tf.nn.log_softmax(tf.cast(value, tf.float32), axis=-1) for value in logits]
        attending = [
            tf.cast(weights, tf.float32)
            for member, weights in zip(self.members, attention, strict=True)
            if weights is not None and _has_attention(member)
        ]
        if not attending:
            attending = [tf.cast(w, tf.float32) for w in attention if w is not None]
        mean_attention = tf.add_n(attending) / len(attending) if attending else None
        return tf.add_n(log_probs) / len(log_probs), mean_attention

    def get_config(self):
        return {
            "name": self.name,
            "members": [keras.saving.serialize_keras_object(member) for member in self.members],
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        members = [keras.saving.deserialize_keras_object(m) for m in config.pop("members")]
        config.pop("dtype", None)
        return cls(members, **config)


def _has_attention(member) -> bool:
    """Whether `member`'s decoder has an attention layer (unknown: assumed so)."""
    decoder = getattr(member, "decoder", None)
    return decoder is None or getattr(decoder, "attention_layer", True) is not None
