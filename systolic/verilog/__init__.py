"""`systolic verilog`: the accelerator's Verilog, its README, Verilator lint and Yosys figures."""
