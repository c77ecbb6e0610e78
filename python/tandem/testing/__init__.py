"""Test support shipped with the package: the OVS differential oracles
(``oneswitch_oracle``, ``dataplane_oracle``) and the bench helpers. Nothing in
the product imports this package."""
