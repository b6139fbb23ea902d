"""A principal is ``Type:name``, as in Kafka (``User:alice``).

``User:ANONYMOUS`` is whoever did not authenticate. ``Broker:<id>`` is another broker of
this cluster calling a broker-to-broker route; it is never written in an ACL (ACLs name
users) and is allowed everything, as Kafka's inter-broker principal usually is a super user.
"""

from __future__ import annotations

from dataclasses import dataclass

USER = "User"
BROKER = "Broker"
USER_NAME_PATTERN = r"^[A-Za-z0-9._@-]{1,255}$"
"""What a user's name may be, at both doors (it becomes ``User:<name>`` in ACLs and logs)."""
USER_PRINCIPAL_PATTERN = r"^User:[A-Za-z0-9._@-]{1,255}$"


@dataclass(frozen=True, slots=True)
class Principal:
    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> Principal:
        """``User:alice`` -> Principal("User", "alice"); raises ValueError on text without a type."""
        kind, separator, name = text.partition(":")
        if not separator or not kind or not name:
            raise ValueError(f"{text!r} is not a principal (write Type:name, e.g. User:alice)")
        return cls(kind, name)

    @classmethod
    def user(cls, name: str) -> Principal:
        return cls(USER, name)

    @classmethod
    def broker(cls, node_id: int) -> Principal:
        return cls(BROKER, str(node_id))

    @property
    def is_broker(self) -> bool:
        return self.type == BROKER


ANONYMOUS = Principal(USER, "ANONYMOUS")
