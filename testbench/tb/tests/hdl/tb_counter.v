// Second test design for nicgen-tb: a 16-bit counter with enable and a step input, so a
// test can load two different models in one process.
`default_nettype none
module tb_counter (
    input  wire        clk,
    input  wire        rst,
    input  wire        en,
    input  wire [15:0] step,
    output reg  [15:0] value
);
    always @(posedge clk) begin
        if (rst) value <= 16'd0;
        else if (en) value <= value + step;
    end
endmodule
`default_nettype wire
