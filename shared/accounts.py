"""People who sign in to the console: users of a workspace, passwords, one-time links, throttled sign-in.

``AccountService(engine, clock, limiter)`` is the only way to a user's password. Hashes are
argon2id (``argon2-cffi``'s defaults, rehashed on sign-in when those change). Sign-in answers
the same for an unknown email, a user without a password and a wrong password, and spends the
same argon2 work on each (a dummy hash stands in), so neither the message nor the time tells
whether an account exists.

Guessing is throttled on two counters, each a fixed window in the API's rate limiter (memory in
the embedded mode, Redis in a farm): attempts per account (the email's hash, so known or not
is counted alike) and attempts per client address. Over either, the attempt is refused before
any password is checked.

What a workspace's people do is scoped to it: a user of another workspace is ``NotFound``.
Signing in, and using a link, come before any workspace is known; the user found then names it.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Protocol

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import Engine

from reelfarm.shared.clock import Clock
from reelfarm.shared.config import RateLimit
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import users as repo
from reelfarm.shared.repos import workspaces
from reelfarm.shared.repos.users import EmailTaken, User
from reelfarm.shared.repos.workspaces import Workspace

__all__ = ["ACCOUNT_RATE", "ADDRESS_RATE", "MAX_PASSWORD", "MIN_PASSWORD", "WRONG", "AccountError", "AccountService",
           "EmailTaken", "NewUser", "Throttled", "User", "Workspace", "check_password"]

log = logging.getLogger("reelfarm.console")

MIN_PASSWORD = 10
MAX_PASSWORD = 1024
ACCOUNT_RATE = RateLimit(limit=10, window_sec=900)  # attempts per email per 15 minutes
ADDRESS_RATE = RateLimit(limit=50, window_sec=900)  # attempts per client address per 15 minutes
WRONG = "The email or password is not right."


class Standing(Protocol):
    """A counter's answer (``reelfarm.api.ratelimit.Quota``)."""

    @property
    def allowed(self) -> bool: ...

    @property
    def retry_after(self) -> int: ...


class Limiter(Protocol):
    """Counts attempts per key and window (``reelfarm.api.ratelimit.RateLimiter``)."""

    def hit(self, key_id: str, rate: RateLimit) -> Standing: ...


class AccountError(Exception):
    """A sign-in, link or password change was refused; ``str()`` is safe to show."""


class Throttled(AccountError):
    def __init__(self, retry_after: int) -> None:
        minutes = max(1, -(-retry_after // 60))
        super().__init__(f"Too many sign-in attempts. Try again in {minutes} minute{'s' if minutes > 1 else ''}.")
        self.retry_after = retry_after


@dataclass(frozen=True)
class NewUser:
    user: User
    link: str


def check_password(password: str) -> str | None:
    """Why a new password is refused, or None."""
    if len(password) < MIN_PASSWORD:
        return f"Use at least {MIN_PASSWORD} characters."
    if len(password) > MAX_PASSWORD:
        return f"Use at most {MAX_PASSWORD} characters."
    if not password.strip():
        return "A password cannot be only spaces."
    return None


_DUMMIES: dict[tuple[object, ...], str] = {}


def _dummy_hash(hasher: PasswordHasher) -> str:
    """A hash of no one's password with ``hasher``'s parameters, checked against for an unknown
    email so that it costs what a real check does. Made once per process and parameters (about
    0.1 s of a CPU), not once per service."""
    key = (hasher.time_cost, hasher.memory_cost, hasher.parallelism, hasher.hash_len, hasher.salt_len, hasher.type)
    if key not in _DUMMIES:
        _DUMMIES[key] = hasher.hash("not a password of anyone")
    return _DUMMIES[key]


class AccountService:
    """Users, links, passwords and sign-in; collaborators passed in, nothing global."""

    def __init__(self, engine: Engine, clock: Clock, limiter: Limiter, hasher: PasswordHasher | None = None) -> None:
        self.engine = engine
        self.clock = clock
        self.limiter = limiter
        self.hasher = hasher or PasswordHasher()
        self._dummy = _dummy_hash(self.hasher)

    def create_user(self, workspace_id: str, email: str, role: str = "member", is_operator: bool = False,
                    public_url: str = "") -> NewUser:
        """A user and their first sign-in link. Raises EmailTaken, NotFound (workspace) or ValueError."""
        with transaction(self.engine) as conn:
            workspaces.get_workspace(conn, workspace_id)
            user = repo.create_user(conn, self.clock, workspace_id=workspace_id, email=email, role=role,
                                    is_operator=is_operator)
            token = repo.issue_link(conn, self.clock, user.id)
        return NewUser(user, repo.link_url(public_url, token))

    def new_link(self, email: str, public_url: str = "") -> NewUser | None:
        """A new one-time sign-in link for the user with this email (one who forgot their
        password); None where no user has it. Earlier links and the password keep working."""
        with transaction(self.engine) as conn:
            user = repo.find_user_by_email(conn, email)
            if user is None:
                return None
            token = repo.issue_link(conn, self.clock, user.id)
        return NewUser(user, repo.link_url(public_url, token))

    def people(self, workspace_id: str) -> list[User]:
        """The workspace's users, oldest first."""
        with self.engine.connect() as conn:
            return repo.list_users(conn, workspace_id)

    def workspace(self, workspace_id: str) -> Workspace:
        """The workspace a signed-in user belongs to (plan, credits). Raises NotFound."""
        with self.engine.connect() as conn:
            return workspaces.get_workspace(conn, workspace_id)

    def get(self, user_id: str) -> User | None:
        """The user a session names (a session carries the id; the user names the workspace)."""
        with self.engine.connect() as conn:
            return repo.find_user(conn, user_id)

    def link_user(self, token: str) -> User | None:
        """Who an unused, unexpired link is for (reading it does not use it up)."""
        with self.engine.connect() as conn:
            return repo.find_by_link(conn, token, self.clock.now())

    def use_link(self, token: str, password: str) -> User:
        """Set the password through a link, using it up. Raises AccountError."""
        problem = check_password(password)
        if problem:
            raise AccountError(problem)
        with transaction(self.engine) as conn:
            user = repo.consume_link(conn, self.clock, token, self.hasher.hash(password))
            if user is None:
                raise AccountError("This sign-in link has been used or has expired. Ask an owner for a new one.")
            repo.record_sign_in(conn, self.clock, user.id)
        return user

    def sign_in(self, email: str, password: str, address: str) -> User:
        """The user with this email and password. Raises Throttled or AccountError(WRONG)."""
        account = hashlib.sha256(repo.normalize_email(email).encode("utf-8")).hexdigest()[:32]
        self._throttle(f"console-signin:account:{account}", ACCOUNT_RATE)
        self._throttle(f"console-signin:address:{address}", ADDRESS_RATE)
        with self.engine.connect() as conn:
            user = repo.find_user_by_email(conn, email) if email.strip() else None
        stored = user.password_hash if user is not None else None
        if user is None or stored is None or not self._verify(stored, password):
            if stored is None:
                self._verify(self._dummy, password)  # the same work as a real check
            raise AccountError(WRONG)
        with transaction(self.engine) as conn:
            if self.hasher.check_needs_rehash(stored):
                repo.set_password(conn, self.clock, user.id, self.hasher.hash(password))
            repo.record_sign_in(conn, self.clock, user.id)
            return repo.get_user(conn, user.id)

    def change_password(self, workspace_id: str, user_id: str, current: str, new: str) -> User:
        """Replace the password after checking the current one. Raises AccountError, or NotFound
        for a user of another workspace."""
        with self.engine.connect() as conn:
            user = repo.get_workspace_user(conn, workspace_id, user_id)
        if user.password_hash is None or not self._verify(user.password_hash, current):
            raise AccountError("The current password is not right.")
        problem = check_password(new)
        if problem:
            raise AccountError(problem)
        with transaction(self.engine) as conn:
            return repo.set_password(conn, self.clock, user.id, self.hasher.hash(new))

    def _verify(self, stored: str, password: str) -> bool:
        try:
            return self.hasher.verify(stored, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    def _throttle(self, key: str, rate: RateLimit) -> None:
        try:
            quota = self.limiter.hit(key, rate)
        except Exception as exc:  # noqa: BLE001 - the limiter's unavailable error is the API's, above this layer
            # counters unreachable: sign-in goes on, as API requests do
            log.warning("sign-in throttle unavailable, attempt not counted: %s", exc)
            return
        if not quota.allowed:
            raise Throttled(quota.retry_after)
