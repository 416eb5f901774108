/* src/kernel/tap_obj.S - src/kernel/tap.bpf.o inside the binary (tap.c loads it from memory). */
	.section .rodata
	.balign 8
	.globl ctsyncd_tap_obj
	.globl ctsyncd_tap_obj_end
ctsyncd_tap_obj:
	.incbin "src/kernel/tap.bpf.o"
ctsyncd_tap_obj_end:
	.section .note.GNU-stack,"",%progbits
