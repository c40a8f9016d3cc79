"""The instruction set: instructions, their encoding, address patterns and the program format.

docs/isa.md is the specification; `instructions` holds one class per instruction,
`patterns` the DMA's address arithmetic, `program` the Program a mapper produces, and
`assembler`/`disassembler` convert programs to and from protobuf messages, binary words and
text.
"""
