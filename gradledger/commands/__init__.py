"""gradledger/commands"""
