"""Where a node's signing key comes from: an encrypted keystore, a named env var, or (devnet
only) one of anvil's well-known accounts.

Keys never come from command-line arguments (they would land in shell history and `ps`).
The devnet accounts are derived from anvil's public test mnemonic; they are refused on any
chain other than the devnet's chain id.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from eth_account import Account
from eth_account.signers.local import LocalAccount

from protocol.errors import GradledgerError

DEVNET_MNEMONIC = "test test test test test test test test test test test junk"
DEVNET_CHAIN_ID = 31337
PRIVATE_KEY_ENV = "GRADLEDGER_PRIVATE_KEY"
KEYSTORE_PASSWORD_ENV = "GRADLEDGER_KEYSTORE_PASSWORD"


class KeyLoadError(GradledgerError):
    """A signing key cannot be loaded."""


def get_devnet_account(index: int, chain_id: int = DEVNET_CHAIN_ID) -> LocalAccount:
    """anvil's well-known account `index` (m/44'/60'/0'/0/index); devnet only."""
    if chain_id != DEVNET_CHAIN_ID:
        raise KeyLoadError(f"devnet accounts are public test keys and are refused on chain {chain_id}; use a keystore")
    if not 0 <= index < 1000:
        raise KeyLoadError(f"devnet account index must be in [0, 1000), got {index}")
    Account.enable_unaudited_hdwallet_features()
    return Account.from_mnemonic(DEVNET_MNEMONIC, account_path=f"m/44'/60'/0'/0/{index}")


def load_keystore_account(path: Path, password_env: str = KEYSTORE_PASSWORD_ENV) -> LocalAccount:
    """Decrypt an eth-account (V3) keystore with the password from env var `password_env`."""
    password = os.environ.get(password_env)
    if password is None:
        raise KeyLoadError(f"keystore {path} needs its password in the environment variable {password_env}")
    try:
        encrypted = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise KeyLoadError(f"keystore file {path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise KeyLoadError(f"keystore file {path} is not JSON: {exc}") from None
    try:
        return Account.from_key(Account.decrypt(encrypted, password))
    except ValueError as exc:
        raise KeyLoadError(f"cannot decrypt keystore {path}: {exc} (wrong password in {password_env}?)") from None


def load_account(
    *, keystore: Path | None = None, devnet_account: int | None = None, chain_id: int = DEVNET_CHAIN_ID
) -> LocalAccount:
    """The node's account: keystore, else devnet account, else $GRADLEDGER_PRIVATE_KEY.

    A keystore and a devnet account together are refused: one of them would be ignored without a word, and a
    node signing with another key than its operator meant stakes, commits and is slashed as someone else."""
    if keystore is not None and devnet_account is not None:
        raise KeyLoadError(
            f"--keystore {keystore} and --devnet-account {devnet_account} both name a signing key: choose one"
        )
    if keystore is not None:
        return load_keystore_account(keystore)
    if devnet_account is not None:
        return get_devnet_account(devnet_account, chain_id)
    key = os.environ.get(PRIVATE_KEY_ENV)
    if key:
        try:
            return Account.from_key(key)
        except ValueError as exc:
            raise KeyLoadError(f"{PRIVATE_KEY_ENV} does not hold a valid private key: {exc}") from None
    raise KeyLoadError(
        f"no signing key: pass --keystore FILE (password in ${KEYSTORE_PASSWORD_ENV}), set ${PRIVATE_KEY_ENV}, "
        "or on the devnet --devnet-account N"
    )
