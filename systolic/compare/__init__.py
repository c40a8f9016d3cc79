"""`systolic compare`: cycle counts across configurations, and SCALE-Sim interoperability."""
