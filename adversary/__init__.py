"""adversary"""
