"""Console users and their one-time sign-in links.

A user belongs to one workspace with a role (``owner`` or ``member``) and may be an operator
(the farm pages). Emails are unique across the service and kept in lower case, so the same
person cannot hold two accounts that differ only by case.

A sign-in link carries a random token (``token_urlsafe(32)``, 256 bits); only its SHA-256 is
stored, with an expiry. A user has at most one outstanding link: issuing a new one replaces
the old. Using it (``consume_link``) clears it in the same statement that checks it, so a link
works once even when two requests race. Password hashes come from the caller (argon2 in
``shared/accounts.py``): this module stores them and never sees a password.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, func, select
from sqlalchemy.exc import IntegrityError

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.tables import USER_ROLES, users

LINK_TTL = timedelta(hours=24)
LINK_PATH = "/app/sign-in/link/"  # where the console answers a link (console/pages/session.py)


class EmailTaken(ValueError):
    """Another user already has this email."""


@dataclass(frozen=True)
class User:
    id: str
    workspace_id: str
    email: str
    role: str
    is_operator: bool
    password_hash: str | None
    link_hash: str | None
    link_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime
    password_changed_at: datetime | None
    last_sign_in_at: datetime | None

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"


def normalize_email(email: str) -> str:
    """The stored form of an email: trimmed, lower case."""
    return email.strip().lower()


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def link_url(public_url: str, token: str) -> str:
    """The address a person opens to use a sign-in link."""
    return public_url.rstrip("/") + LINK_PATH + token


def create_user(conn: Connection, clock: Clock, *, workspace_id: str, email: str, role: str = "member",
                is_operator: bool = False) -> User:
    """A user without a password (they set one through a sign-in link).

    Raises:
        EmailTaken: another user has this email.
        ValueError: an unknown role or an address without ``@``.
    """
    if role not in USER_ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {', '.join(USER_ROLES)}")
    address = normalize_email(email)
    if "@" not in address.strip("@") or len(address) > 320:
        raise ValueError(f"not an email address: {email!r}")
    if find_user_by_email(conn, address) is not None:
        raise EmailTaken(f"{address} already has an account")
    now = clock.now()
    user_id = new_id()
    try:
        with conn.begin_nested():
            conn.execute(users.insert().values(
                id=user_id, workspace_id=workspace_id, email=address, role=role, is_operator=is_operator,
                created_at=now, updated_at=now))
    except IntegrityError as exc:
        raise EmailTaken(f"{address} already has an account") from exc
    return get_user(conn, user_id)


def get_user(conn: Connection, user_id: str) -> User:
    """Raises NotFound."""
    row = conn.execute(select(users).where(users.c.id == user_id)).first()
    if row is None:
        raise NotFound("user", user_id)
    return User(**row._mapping)


def get_workspace_user(conn: Connection, workspace_id: str, user_id: str) -> User:
    """The workspace's user with this id. Raises NotFound (also for another workspace's user)."""
    row = conn.execute(select(users).where(users.c.workspace_id == workspace_id, users.c.id == user_id)).first()
    if row is None:
        raise NotFound("user", user_id)
    return User(**row._mapping)


def find_user(conn: Connection, user_id: str) -> User | None:
    row = conn.execute(select(users).where(users.c.id == user_id)).first()
    return None if row is None else User(**row._mapping)


def find_user_by_email(conn: Connection, email: str) -> User | None:
    row = conn.execute(select(users).where(users.c.email == normalize_email(email))).first()
    return None if row is None else User(**row._mapping)


def list_users(conn: Connection, workspace_id: str) -> list[User]:
    """The workspace's users, oldest first."""
    rows = conn.execute(select(users).where(users.c.workspace_id == workspace_id)
                        .order_by(users.c.created_at, users.c.id))
    return [User(**row._mapping) for row in rows]


def count_users(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(users)).scalar_one())


def issue_link(conn: Connection, clock: Clock, user_id: str, ttl: timedelta = LINK_TTL) -> str:
    """A fresh one-time sign-in token for the user (any earlier one stops working). Raises NotFound."""
    get_user(conn, user_id)
    token = secrets.token_urlsafe(32)
    now = clock.now()
    conn.execute(users.update().where(users.c.id == user_id).values(
        link_hash=hash_token(token), link_expires_at=now + ttl, updated_at=now))
    return token


def find_by_link(conn: Connection, token: str, now: datetime) -> User | None:
    """The user whose unexpired link this is, without using it up."""
    row = conn.execute(select(users).where(users.c.link_hash == hash_token(token),
                                           users.c.link_expires_at > now)).first()
    return None if row is None else User(**row._mapping)


def consume_link(conn: Connection, clock: Clock, token: str, password_hash: str) -> User | None:
    """Use the link once: set the password and clear the link, or None if it is unknown, used or expired."""
    now = clock.now()
    user_id = conn.execute(
        users.update()
        .where(users.c.link_hash == hash_token(token), users.c.link_expires_at > now)
        .values(link_hash=None, link_expires_at=None, password_hash=password_hash, password_changed_at=now,
                updated_at=now)
        .returning(users.c.id)
    ).scalar()
    return None if user_id is None else get_user(conn, user_id)


def set_password(conn: Connection, clock: Clock, user_id: str, password_hash: str) -> User:
    """Replace the password hash (sessions signed with the old one stop working). Raises NotFound."""
    now = clock.now()
    conn.execute(users.update().where(users.c.id == user_id).values(
        password_hash=password_hash, password_changed_at=now, updated_at=now))
    return get_user(conn, user_id)


def record_sign_in(conn: Connection, clock: Clock, user_id: str) -> None:
    conn.execute(users.update().where(users.c.id == user_id).values(last_sign_in_at=clock.now()))
