/*
 * The zygote program's image (sandbox-mcp-nsexec, built first), part of
 * the server's read-only data: nsexec.c puts it in a sealed memfd.
 */
	.section .rodata
	.balign	16
	.globl	nsexec_image
	.type	nsexec_image, @object
nsexec_image:
	.incbin	"sandbox-mcp-nsexec"
	.globl	nsexec_image_end
nsexec_image_end:
	.section .note.GNU-stack, "", @progbits
